"""Reading a host's robots.txt for a crawl (ROBOTS_TXT=true; the rules: ``core/robots.py``).

Asked for by a snapshot that holds a slot of the host at its booked start, so the fetch is
one of the host's starts: it counts as one (the next snapshot waits its delay after it).
A 429/503 rests the host like any hook's, and the fetch is tried again after the rest; any
other answer than 2xx, or none, allows everything (noted on the row). The snapshots of the
crawl waiting for it are woken once it is read.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request

from django.conf import settings
from django.utils import timezone

from archivebox import hostrules
from archivebox.core import hostleases, robots
from archivebox.core.graphs import SnapshotGraph
from archivebox.core.models import Crawl, Snapshot
from archivebox.core.reads import crawl_option
from archivebox.sideeffects.queue import sideeffect
from archivebox.tasks.dispatch import wake_rows
from archivebox.transitions.effects import FetchRobots

logger = logging.getLogger(__name__)

MAX_BYTES = 512 * 1024  # Google reads the first 500 KiB
TIMEOUT = 15.0


class _NoRedirectErrors(urllib.request.HTTPErrorProcessor):
    """Every status comes back as a response (4xx/5xx included)."""

    def http_response(self, request, response):
        return response

    https_response = http_response


@sideeffect(FetchRobots)
def fetch_robots(crawl_id, host: str, origin: str) -> None:
    now = timezone.now()
    crawl = Crawl.objects.filter(pk=crawl_id).defer("urls").first()
    if crawl is None or not robots.claim(crawl_id, host, now):
        return
    hostleases.started(host, now)
    user_agent = crawl_option(crawl, "USER_AGENT") or ""
    status, body, note = read(f"{origin}/robots.txt", user_agent)
    if status in hostrules.RATE_LIMIT_STATUSES:
        config = settings.ENGINE
        hostleases.pause(host, hostrules.retry_after_seconds(note, now), f"robots.txt: HTTP {status}", f"robots:{crawl_id}:{now.timestamp()}",
                         now, config.rate_limit_backoff, config.rate_limit_max_pause)
        robots.release(crawl_id, host)
    else:
        robots.store(crawl_id, host, status if 200 <= status < 300 else 0, body if 200 <= status < 300 else "", note, timezone.now())
        logger.info("crawl %s: robots.txt of %s read (%s)", crawl_id, host, note or f"HTTP {status}")
    waiting = Snapshot.objects.filter(crawl_id=crawl_id, host=host, status=SnapshotGraph.queued, retry_at__gt=now)
    wake_rows(Snapshot, list(waiting.values_list("pk", flat=True)[:50]))


def read(url: str, user_agent: str) -> tuple[int, str, str]:
    """``(status, body, note)`` of a GET of ``url``; status 0 when it could not be read.
    For a 429/503 the note is its Retry-After header."""
    request = urllib.request.Request(url, headers={"User-Agent": user_agent or "ArchiveBox"})
    opener = urllib.request.build_opener(_NoRedirectErrors())
    try:
        with opener.open(request, timeout=TIMEOUT) as response:
            status = response.status
            if status in hostrules.RATE_LIMIT_STATUSES:
                return status, "", response.headers.get("Retry-After") or ""
            raw = response.read(MAX_BYTES)
    except (OSError, ValueError) as err:
        return 0, "", f"could not be read ({type(err).__name__}: {err}): nothing is disallowed"
    if not 200 <= status < 300:
        return status, "", f"HTTP {status}: nothing is disallowed"
    return status, raw.decode("utf-8", errors="replace"), ""
