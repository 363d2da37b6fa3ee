"""Side effects of a snapshot's lifecycle."""

from __future__ import annotations

import logging

from django.utils import timezone

from archivebox.core.graphs import SnapshotGraph
from archivebox.core.models import ArchiveResult, Crawl, Snapshot
from archivebox.sideeffects import index as index_effects
from archivebox.core import hostleases
from archivebox.sideeffects.pacing import activate
from archivebox.sideeffects.queue import sideeffect
from archivebox.transitions.effects import SnapshotFinished, SnapshotStarted
from archivebox.sideeffects.results import create_results, queued_results
from archivebox.tasks.dispatch import dispatch_now, wake_rows
from archivebox.core import rowsql

logger = logging.getLogger(__name__)


@sideeffect(SnapshotStarted)
def snapshot_started(snapshot_id) -> None:
    """Make the snapshot's folder, create one result per enabled hook, start step 0."""
    snapshot = rowsql.load(Snapshot, [snapshot_id], "crawl").get(snapshot_id)
    if snapshot is None or snapshot.status != SnapshotGraph.started:
        return
    hostleases.started(snapshot.host, snapshot.started_at or timezone.now())
    snapshot.output_dir.mkdir(parents=True, exist_ok=True)
    now = timezone.now()
    create_results(snapshot.crawl, snapshot, now)
    due = queued_results(snapshot.pk, snapshot.current_step)
    # The results just created are due already: they only need dispatching. Older ones (this
    # side effect running again) may be parked and need waking first.
    dispatch_now(ArchiveResult, [pk for pk, _, retry_at in due if retry_at is not None and retry_at <= now])
    wake_rows(ArchiveResult, [pk for pk, _, retry_at in due if retry_at is None or retry_at > now])
    if all(background for _, background, _ in due):
        # No foreground hook of this step will wake the snapshot when it is done (there is
        # none): it must look at its steps now, not at its next check.
        wake_rows(Snapshot, [snapshot.pk])


@sideeffect(SnapshotFinished)
def snapshot_finished(snapshot_id) -> None:
    """Sealed or failed: its host slot freed, final index, the next parked snapshot in, the crawl woken if it was the last."""
    found = rowsql.values(Snapshot, ("crawl_id", "host"), {"id": snapshot_id})
    if not found:
        return
    crawl_id, host = found[0]
    hostleases.release(snapshot_id, host, timezone.now())
    index_effects.write_final_index(snapshot_id)
    wake_rows(ArchiveResult, list(ArchiveResult.objects.filter(snapshot_id=snapshot_id, retry_at__isnull=False).values_list("pk", flat=True)))
    activate(crawl_id)
    if not Snapshot.objects.filter(crawl_id=crawl_id, retry_at__isnull=False).exists():
        wake_rows(Crawl, [crawl_id])
