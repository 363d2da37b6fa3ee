"""Retry failed results: re-queue them and re-run their snapshots' steps.

Results already succeeded or skipped are kept. In the foreground the command returns
when every re-opened snapshot is final.
"""

from __future__ import annotations

import sys
import time

from django.conf import settings
from django.utils import timezone

from archivebox.cli.common import setup_django
from archivebox.core.models import ArchiveResult, Snapshot
from archivebox.cli.progress import pools_alive
from archivebox.process.embedded import EmbeddedWorkers
from archivebox.sideeffects.wake import wake_rows
from archivebox.transitions.archiveresult import transition_archiveresult_reopen
from archivebox.transitions.snapshot import transition_snapshot_reopen


def register(parser) -> None:
    parser.add_argument("--crawl", help="only results of this crawl id")
    parser.add_argument("--bg", action="store_true", help="only re-queue; return at once")


def reopen_failed(crawl_id: str | None = None) -> tuple[int, list]:
    """Re-queue failed results of snapshots whose crawl was not cancelled; returns (results, snapshot ids)."""
    now = timezone.now()
    failed = ArchiveResult.objects.filter(status="failed", snapshot__isnull=False).exclude(crawl__status="failed")
    if crawl_id:
        failed = failed.filter(crawl_id=crawl_id)
    reopened, snapshot_ids = 0, set()
    for result in failed.iterator(chunk_size=500):
        if transition_archiveresult_reopen(result, now=now, max_attempts=settings.ENGINE.hook_max_attempts):
            reopened += 1
            snapshot_ids.add(result.snapshot_id)
    for snapshot in Snapshot.objects.filter(pk__in=snapshot_ids, status__in=("sealed", "failed")):
        transition_snapshot_reopen(snapshot, now=now)
    wake_rows(Snapshot, list(snapshot_ids))
    return reopened, sorted(snapshot_ids)


def run(args) -> int:
    setup_django()
    reopened, snapshot_ids = reopen_failed(args.crawl)
    print(f"Re-queued {reopened} failed result(s) in {len(snapshot_ids)} snapshot(s).")
    if args.bg or not snapshot_ids:
        return 0
    done = lambda: not Snapshot.objects.filter(pk__in=snapshot_ids, retry_at__isnull=False).exists()  # noqa: E731
    if pools_alive():
        while not done():
            time.sleep(0.25)
        return 0
    workers = EmbeddedWorkers()
    workers.start()
    try:
        finished = workers.run_until(done)
    finally:
        workers.stop(graceful=True)
    remaining = ArchiveResult.objects.filter(snapshot_id__in=snapshot_ids, status="failed").count()
    print(f"Done: {remaining} result(s) still failed." if finished else "Interrupted: the rest continues when workers run.", file=sys.stdout)
    return 0 if finished else 130
