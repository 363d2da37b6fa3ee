# The image docker-compose.yml runs for every ArchiveBox service (web, init, ticks, sideeffects).
# Debian's wget and Chromium serve the built-in wget, screenshot, pdf and dom hooks.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    DATA_DIR=/data

RUN apt-get update \
    && apt-get install -y --no-install-recommends wget chromium \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY archivebox ./archivebox
# The postgres extra brings psycopg (DATABASE_URL=postgres://…); redis is a core dependency.
RUN pip install --no-cache-dir '.[postgres]'

RUN useradd --create-home --uid 911 archivebox \
    && mkdir -p /data \
    && chown archivebox:archivebox /data
USER archivebox
WORKDIR /data
VOLUME /data
EXPOSE 8000
CMD ["archivebox", "server", "0.0.0.0:8000"]
