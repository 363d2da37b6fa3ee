"""Schedules fire from the orchestrator: one crawl per due period, exactly once.

A due schedule is moved to its next run by a compare-and-swap on ``next_run_at``, in the
same transaction that creates its crawl: however many orchestrators look at once, one wins
the swap, and a crawl exists if and only if its period was claimed. The next run is computed
from *now*, so a schedule that missed many periods (the machines were down) fires once to
catch up, not once per missed period. The crawl is created due; the orchestrator's next pass
dispatches it like any other.

A schedule without URLs is the collection's maintenance (ArchiveBox's ``schedule
--every=day`` without a URL): each run does what ``archivebox update`` does to the whole
collection (failed results of hooks that still exist are re-queued, snapshots never
archived are archived), and makes no crawl.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.db.models import F

from archivebox.core.models import ArchiveResult, Crawl, Schedule, Snapshot
from archivebox.core.models.schedule import next_run, period_text
from archivebox.tasks.actions import archive_indexed, retry_failed

logger = logging.getLogger(__name__)


def fire_due(now: dt.datetime) -> list[Crawl]:
    """Fire every enabled schedule whose time has come; returns the crawls made."""
    made = []
    for schedule in Schedule.objects.filter(enabled=True, next_run_at__lte=now):
        crawl = fire(schedule, now)
        if crawl is not None:
            made.append(crawl)
    return made


def fire(schedule: Schedule, now: dt.datetime, force: bool = False) -> Crawl | None:
    """One run of ``schedule`` (``force``: now, whatever its time; its next run stays)."""
    urls = [line.strip() for line in schedule.urls.splitlines() if line.strip()]
    with transaction.atomic():
        if not force:
            following = next_run(schedule.cron, now)
            claimed = Schedule.objects.filter(pk=schedule.pk, next_run_at=schedule.next_run_at, enabled=True).update(
                next_run_at=following, last_run_at=now, runs=F("runs") + 1)
            if not claimed:
                return None  # another orchestrator fired this period
        else:
            Schedule.objects.filter(pk=schedule.pk).update(last_run_at=now, runs=F("runs") + 1)
        if schedule.is_maintenance:
            crawl = None
        else:
            if schedule.only_new:
                seen = set(Snapshot.objects.filter(url__in=urls).values_list("url", flat=True))
                urls = [url for url in urls if url not in seen]
            if not urls:
                logger.info("schedule %s: nothing new to archive", schedule.pk)
                return None
            crawl = Crawl.objects.create(urls="\n".join(urls), max_depth=schedule.depth, tags_str=schedule.tags_str,
                                         config=dict(schedule.config or {}),
                                         label=f"schedule {schedule.pk} ({period_text(schedule.every)})", retry_at=now)
            Schedule.objects.filter(pk=schedule.pk).update(last_crawl=crawl)
    if crawl is None:
        maintain()  # after the period's claim is committed: it re-opens rows of its own
        logger.info("schedule %s fired: the collection's maintenance update", schedule.pk)
        return None
    logger.info("schedule %s fired: crawl %s of %d URL(s)", schedule.pk, crawl.pk, len(urls))
    return crawl


def maintain() -> tuple[int, int]:
    """``archivebox update`` of the whole collection: returns how many failed results were
    re-queued and how many never-archived snapshots were queued."""
    reopened, _ = retry_failed(ArchiveResult.objects.all(), skip_missing_hooks=True)
    _, indexed = archive_indexed(Snapshot.objects.all())
    logger.info("maintenance: %d failed result(s) re-queued, %d snapshot(s) never archived queued", reopened, len(indexed))
    return reopened, len(indexed)
