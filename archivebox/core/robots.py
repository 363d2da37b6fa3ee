"""robots.txt on request (``ROBOTS_TXT=true``): read once per host per crawl, then obeyed.

It applies to crawls that follow links (depth > 0): their outlinks (snapshots of depth
> 0) that a host's robots.txt disallows for the crawl's USER_AGENT are skipped (failed,
saying so, and counted by ``archivebox status``), and every snapshot of the crawl waits
the host's ``Crawl-delay`` between starts, if it is longer than PER_HOST_DELAY. The seeds
a user gave are archived whatever robots.txt says, as ArchiveBox archives what it is
asked for. Parsing is protego's (wildcards, ``$``, Crawl-delay).

The fetch itself is a side effect (``sideeffects/robots.py``) asked for by a snapshot that
holds a slot of its host at its booked start, so it goes through the host's limits; it is
claimed by making this row first (:func:`claim`), so pools never fetch it twice at once.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass

from django.db import connections
from django.db.models import Q
from protego import Protego

from archivebox.core.models import RobotsTxt, Snapshot
from archivebox.core.models.snapshot import ROBOTS_SKIPPED

# A claimed fetch that left no result after this long was lost with its worker: claimed again.
FETCH_LOST_AFTER = dt.timedelta(seconds=60)
SKIPPED = ROBOTS_SKIPPED  # how a skipped snapshot's last_error starts


@dataclass(frozen=True)
class Rules:
    """A host's robots.txt as read for one crawl (``status`` 0: unreadable, allows all)."""

    host: str
    status: int
    body: str

    def allows(self, url: str, user_agent: str) -> bool:
        return parsed(self.body).can_fetch(url, user_agent) if self.body else True

    def crawl_delay(self, user_agent: str) -> float:
        if not self.body:
            return 0.0
        return float(parsed(self.body).crawl_delay(user_agent) or 0.0)


@functools.lru_cache(maxsize=256)
def parsed(body: str) -> Protego:
    return Protego.parse(body)


def rules(crawl_id, host: str) -> Rules | None:
    """The robots.txt the crawl read for ``host``, or None while it has not been read."""
    row = RobotsTxt.objects.filter(crawl_id=crawl_id, host=host, fetched_at__isnull=False).values_list("status", "body").first()
    return Rules(host, *row) if row else None


def claim(crawl_id, host: str, now: dt.datetime) -> bool:
    """Whether this caller should fetch it: no one has, and no one is (or the one who was
    left no result for FETCH_LOST_AFTER)."""
    RobotsTxt.objects.bulk_create([RobotsTxt(crawl_id=crawl_id, host=host)], ignore_conflicts=True)
    return bool(RobotsTxt.objects.filter(Q(fetching_since__isnull=True) | Q(fetching_since__lt=now - FETCH_LOST_AFTER),
                                         crawl_id=crawl_id, host=host, fetched_at__isnull=True).update(fetching_since=now))


def store(crawl_id, host: str, status: int, body: str, note: str, now: dt.datetime) -> None:
    RobotsTxt.objects.filter(crawl_id=crawl_id, host=host).update(status=status, body=body, note=note[:500], fetched_at=now)


def release(crawl_id, host: str) -> None:
    """Give the fetch up (the host asked to slow down): it is fetched again after the rest."""
    RobotsTxt.objects.filter(crawl_id=crawl_id, host=host, fetched_at__isnull=True).update(fetching_since=None)


# The snapshots robots.txt skipped, as the partial index snapshot_robots_skipped's condition
# spells them (Snapshot.Meta): a planner uses a partial index only for a WHERE clause that says
# the same with literals (SQLite never matches bound parameters, and without statistics it
# must be told to use the index; a statement that cannot use it fails instead of scanning).
_SKIPPED_COUNT = {
    "sqlite": "SELECT count(*) FROM core_snapshot INDEXED BY snapshot_robots_skipped "  # noqa: S608 - constants
              f"WHERE \"last_error\" LIKE '{SKIPPED}%' ESCAPE '\\' AND \"status\" = 'failed'",
    "postgresql": f"SELECT count(*) FROM core_snapshot WHERE last_error LIKE '{SKIPPED}%' AND status = 'failed'",  # noqa: S608
}


def skipped() -> int:
    """How many snapshots robots.txt skipped: failed ones, counted from the index of only
    those, not from every failed snapshot's last_error (150 ms of ``status`` on a million
    snapshots)."""
    connection = connections[Snapshot.objects.db]
    with connection.cursor() as cursor:
        cursor.execute(_SKIPPED_COUNT[connection.vendor])  # no parameters: "%" is the pattern's own
        return cursor.fetchone()[0]
