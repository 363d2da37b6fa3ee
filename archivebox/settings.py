"""Django settings, built from the environment only.

``DATA_DIR`` (default: the current directory) holds everything: the SQLite index, the
queue files, the archive. ``DATABASE_URL`` and ``REDIS_URL`` switch to the scale-out
deployment (Postgres + Redis) without any code change.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from archivebox import tuning
from archivebox.config import ConfigError, EngineConfig, parse_bool, read_config_file, resolve_data_dir

DATA_DIR: Path = resolve_data_dir()
ENGINE: EngineConfig = EngineConfig.from_env(data_dir=DATA_DIR)
ARCHIVE_DIR: Path = DATA_DIR / "archive"
QUEUE_DIR: Path = DATA_DIR / "queues"
LOGS_DIR: Path = DATA_DIR / "logs"
REDIS_URL: str = os.environ.get("REDIS_URL", "").strip()
CONFIG_FILE_VALUES: dict[str, str] = read_config_file(DATA_DIR)
PLUGIN_DIRS: str = os.environ.get("PLUGIN_DIRS", CONFIG_FILE_VALUES.get("PLUGIN_DIRS", ""))

# The SQLite backend (the task monitor gets its own file when the app DB is SQLite).
SQLITE_ENGINE = "django.db.backends.sqlite3"
SQLITE_OPTIONS = {
    # WAL lets readers run beside the writer; IMMEDIATE takes the write lock at BEGIN so a
    # transaction never fails half-way on a read-to-write upgrade; the busy timeout makes
    # writers queue instead of failing with "database is locked".
    "timeout": 60,
    "transaction_mode": "IMMEDIATE",
    "init_command": (
        "PRAGMA journal_mode=WAL;"
        "PRAGMA synchronous=NORMAL;"
        "PRAGMA busy_timeout=60000;"
        "PRAGMA foreign_keys=ON;"
        "PRAGMA cache_size=-16000;"
    ),
}


def require_psycopg() -> None:
    """Postgres needs the optional ``postgres`` extra: say so before Django fails on first use."""
    try:
        import psycopg  # noqa: F401, PLC0415 - only checks that the optional driver is installed
    except ImportError:
        raise ConfigError("DATABASE_URL: a postgres URL needs the psycopg driver: "
                          "pip install 'archivebox[postgres]' (or psycopg[binary])") from None


def database_from_url(url: str, data_dir: Path) -> dict:
    """Translate ``DATABASE_URL`` into a Django ``DATABASES`` entry."""
    if not url:
        return {"ENGINE": SQLITE_ENGINE, "NAME": str(data_dir / "index.sqlite3"), "OPTIONS": dict(SQLITE_OPTIONS), "CONN_MAX_AGE": None}
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        if parts.netloc:
            raise ConfigError(f"DATABASE_URL: sqlite URLs take no host, got {url!r}")
        # sqlite:///relative.db -> relative to DATA_DIR; sqlite:////abs/path.db -> absolute
        name = Path(unquote(parts.path)[1:])
        target = name if name.is_absolute() else data_dir / name
        return {"ENGINE": SQLITE_ENGINE, "NAME": str(target), "OPTIONS": dict(SQLITE_OPTIONS), "CONN_MAX_AGE": None}
    if parts.scheme in ("postgres", "postgresql"):
        require_psycopg()
        # A server that cannot be reached fails a connection attempt after this many seconds
        # (libpq's default is to wait forever); ``?connect_timeout=`` in the URL overrides it.
        options = {"connect_timeout": "10", **dict(parse_qsl(parts.query))}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")) or "archivebox",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": None,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    raise ConfigError(f"DATABASE_URL: unsupported scheme {parts.scheme!r} (use sqlite:// or postgres://)")


def _secret_key(data_dir: Path) -> str:
    """``SECRET_KEY``, else the collection's ``.secret_key`` (written by init), else a per-process key."""
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    try:
        return (data_dir / ".secret_key").read_text().strip()
    except OSError:
        return secrets.token_urlsafe(48)


SECRET_KEY = _secret_key(DATA_DIR)
DEBUG = parse_bool("DEBUG", os.environ.get("DEBUG", "false"))
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "*").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "bx_django_utils",
    "huey_monitor",
    "archivebox.core",
    "archivebox.web",
    "archivebox.apps.EngineConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "archivebox.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_from_url(os.environ.get("DATABASE_URL", "").strip(), DATA_DIR)}


if DATABASES["default"]["ENGINE"] == SQLITE_ENGINE:
    tuning.import_huey_without_postgres_driver()  # a kept trick: see archivebox.tuning
# The task monitor writes a row per Huey signal: on SQLite it gets a file of its own, so
# its writes never wait on the app's write lock (archivebox.web.dbrouter routes it there).
if DATABASES["default"]["ENGINE"] == SQLITE_ENGINE:
    DATABASES["monitor"] = {**DATABASES["default"], "NAME": str(DATA_DIR / "monitor.sqlite3"), "OPTIONS": dict(SQLITE_OPTIONS)}
DATABASE_ROUTERS = ["archivebox.web.dbrouter.MonitorRouter"]
TASK_MONITOR = parse_bool("TASK_MONITOR", os.environ.get("TASK_MONITOR", CONFIG_FILE_VALUES.get("TASK_MONITOR", "true")))
# huey.contrib.djhuey (imported by django-huey-monitor) builds a Huey from this setting. Our
# queues are archivebox.tasks.queue.huey and archivebox.sideeffects.queue.huey; djhuey's own
# instance is an in-memory one that nothing consumes, pinned to immediate=False so that
# DEBUG never turns immediate mode on and no Redis connection is ever made for it.
HUEY = {"huey_class": "huey.MemoryHuey", "name": "djhuey-unused", "immediate": False, "results": False}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "archivebox": {"handlers": ["stderr"], "level": os.environ.get("LOG_LEVEL", "WARNING").upper(), "propagate": False},
    },
}
