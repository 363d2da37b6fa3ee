"""Schedules fire from the orchestrator: one crawl per due period, exactly once.

A due schedule is moved to its next run by a compare-and-swap on ``next_run_at``, in the
same transaction that creates its crawl: however many orchestrators look at once, one wins
the swap, and a crawl exists if and only if its period was claimed. The next run is computed
from *now*, so a schedule that missed many periods (the machines were down) fires once to
catch up, not once per missed period. The crawl is created due; the orchestrator's next pass
dispatches it like any other.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.db.models import F

from archivebox.core.models import Crawl, Schedule, Snapshot
from archivebox.core.models.schedule import next_run, period_text

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
        if schedule.only_new:
            seen = set(Snapshot.objects.filter(url__in=urls).values_list("url", flat=True))
            urls = [url for url in urls if url not in seen]
        if not urls:
            logger.info("schedule %s: nothing new to archive", schedule.pk)
            return None
        crawl = Crawl.objects.create(urls="\n".join(urls), max_depth=schedule.depth, tags_str=schedule.tags_str,
                                     config=dict(schedule.config or {}), label=f"schedule {schedule.pk} ({period_text(schedule.every)})",
                                     retry_at=now)
        Schedule.objects.filter(pk=schedule.pk).update(last_crawl=crawl)
    logger.info("schedule %s fired: crawl %s of %d URL(s)", schedule.pk, crawl.pk, len(urls))
    return crawl
