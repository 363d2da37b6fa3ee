"""Pacing a crawl's snapshots (SNAPSHOT_MAX_ACTIVE): which parked snapshots are let in, and
that finding them costs the same with a hundred thousand parked as with ten."""

from __future__ import annotations

import datetime as dt

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from archivebox.core.models import Crawl, Snapshot
from archivebox.sideeffects.pacing import activate

HOUR = dt.timedelta(hours=1)


def parked_crawl(count: int) -> Crawl:
    now = timezone.now()
    crawl = Crawl.objects.create(urls="https://example.com/", status="started", started_at=now, retry_at=now + HOUR)
    Snapshot.objects.bulk_create([
        Snapshot(crawl=crawl, url=f"https://example.com/{n}", depth=1 - n % 2, retry_at=now + HOUR,
                 created_at=now + dt.timedelta(seconds=n))
        for n in range(count)
    ])
    return crawl


def let_in(crawl) -> set:
    """Queued snapshots no longer parked (made due, or already claimed by a dispatch)."""
    return set(Snapshot.objects.filter(crawl=crawl, status="queued", retry_at__lt=timezone.now() + HOUR / 2).values_list("url", flat=True))


def test_parked_snapshots_are_let_in_by_depth_then_age_up_to_the_room_left():
    crawl = parked_crawl(10)
    Snapshot.objects.filter(url="https://example.com/9").update(status="started")  # one in flight
    assert activate(crawl.pk, 4) == 3
    # depth 0 are the odd ones; the oldest three of them
    assert let_in(crawl) == {"https://example.com/1", "https://example.com/3", "https://example.com/5"}


def test_finding_the_next_parked_snapshots_walks_indexes_only():
    """It sorted every parked snapshot of the crawl (35 ms per finished snapshot with
    100,000 parked) and counted due ones through the status index (12 ms)."""
    crawl = parked_crawl(50)
    with CaptureQueriesContext(connection) as queries:
        assert activate(crawl.pk, 4) == 4
    plans = {}
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            if query["sql"].lstrip().upper().startswith(("SELECT", "WITH")) and "core_snapshot" in query["sql"]:
                cursor.execute("EXPLAIN QUERY PLAN " + query["sql"])
                plans[query["sql"]] = " | ".join(row[-1] for row in cursor.fetchall())
    assert plans
    for sql, plan in plans.items():
        assert "TEMP B-TREE" not in plan and "SCAN core_snapshot" not in plan, (sql, plan)
    assert any("WITH RECURSIVE" in sql and "snapshot_waiting" in plan for sql, plan in plans.items()), plans
