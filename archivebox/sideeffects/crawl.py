"""Side effects of a crawl's lifecycle: its own hooks, its root snapshots, its snapshots' pacing."""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Crawl, Snapshot, Tag
from archivebox.core.urlcheck import is_valid_url
from archivebox.sideeffects.queue import sideeffect
from archivebox.core.reads import parked, results_of
from archivebox.sideeffects.results import create_results
from archivebox.tasks.dispatch import wake_rows
from archivebox.core import rowsql

logger = logging.getLogger(__name__)

BATCH = 500


@sideeffect
def crawl_started(crawl_id) -> None:
    """Create the crawl's own hook results (step 0 due now), then let the crawl look."""
    crawl = Crawl.objects.filter(pk=crawl_id).first()
    if crawl is None or crawl.status != "started":
        return
    create_results(crawl, None, timezone.now())
    due = results_of("Crawl", crawl.pk).filter(status="queued", step__lte=crawl.current_step).values_list("pk", flat=True)
    wake_rows(ArchiveResult, due)
    wake_rows(Crawl, [crawl.pk])


def create_snapshots(crawl: Crawl, urls: list[str], depth: int, parent_id=None) -> int:
    """Bulk-create parked, queued snapshots (duplicates within the crawl are ignored), tagged
    with the crawl's tags. Returns how many were created (not counting the duplicates)."""
    now = timezone.now()
    tags = [Tag.objects.get_or_create(name=name)[0] for name in crawl.tag_names]
    created = 0
    for start in range(0, len(urls), BATCH):
        batch = urls[start:start + BATCH]
        rows = [Snapshot(crawl=crawl, url=url, depth=depth, parent_id=parent_id, retry_at=parked(now)) for url in batch]
        Snapshot.objects.bulk_create(rows, ignore_conflicts=True)
        created += Snapshot.objects.filter(pk__in=[row.pk for row in rows]).count()  # an ignored duplicate's id is not stored
        if tags:
            ids = Snapshot.objects.filter(crawl=crawl, url__in=batch).values_list("pk", flat=True)
            through = Snapshot.tags.through
            through.objects.bulk_create([through(snapshot_id=pk, tag_id=tag.pk) for pk in ids for tag in tags], ignore_conflicts=True)
    return created


def activate(crawl_id, max_active: int) -> int:
    """Wake parked snapshots of the crawl while fewer than ``max_active`` snapshots are in flight."""
    now = timezone.now()
    # Due queued snapshots are few (their start is on its way): count them by the due index,
    # not by the status index, which would walk every parked one.
    in_flight = Snapshot.objects.filter(status="started").count() + rowsql.count_due(Snapshot, ("queued",), now)
    room = max_active - in_flight
    if room <= 0:
        return 0
    parked_ids = (Snapshot.objects.filter(crawl_id=crawl_id, status="queued", retry_at__gt=now)
                  .order_by("depth", "created_at").values_list("pk", flat=True)[:room])
    return wake_rows(Snapshot, list(parked_ids))


@sideeffect
def create_root_snapshots(crawl_id) -> None:
    crawl = Crawl.objects.filter(pk=crawl_id).first()
    if crawl is None or crawl.status != "started":
        return
    urls = [url for url in crawl.seed_urls if is_valid_url(url)]
    create_snapshots(crawl, urls, depth=0)
    activate(crawl.pk, settings.ENGINE.snapshot_max_active)
    wake_rows(Crawl, [crawl.pk])


@sideeffect
def activate_snapshots(crawl_id) -> None:
    activate(crawl_id, settings.ENGINE.snapshot_max_active)


@sideeffect
def crawl_finished(crawl_id) -> None:
    """A crawl is final: anything of it still waiting should notice now, not at its parked date."""
    waiting = Snapshot.objects.filter(crawl_id=crawl_id, retry_at__isnull=False).values_list("pk", flat=True)
    wake_rows(Snapshot, list(waiting))
    wake_rows(ArchiveResult, list(results_of("Crawl", crawl_id).filter(retry_at__isnull=False).values_list("pk", flat=True)))
