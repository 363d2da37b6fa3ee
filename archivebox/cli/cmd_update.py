"""Retry failed results (re-queue them and re-run their snapshots' steps), and archive the
snapshots added with ``add --index-only``.

Results already succeeded or skipped are kept. In the foreground the command returns
when every re-opened snapshot is final.
"""

from __future__ import annotations

import sys

from archivebox.core.graphs import ArchiveResultGraph
from archivebox.cli.common import parse_uuid, setup_django
from archivebox.core.models import ArchiveResult, Snapshot
from archivebox.cli.waiting import run_until
from archivebox.tasks.actions import archive_indexed, retry_failed


def register(parser) -> None:
    parser.add_argument("--crawl", help="only results of this crawl id")
    parser.add_argument("--bg", action="store_true", help="only re-queue; return at once")


def run(args) -> int:
    crawl_id = parse_uuid(args.crawl, "--crawl") if args.crawl else None
    setup_django()
    results, snapshots = ArchiveResult.objects.all(), Snapshot.objects.all()
    if args.crawl:
        results, snapshots = results.filter(crawl_id=crawl_id), snapshots.filter(crawl_id=crawl_id)
    reopened, snapshot_ids = retry_failed(results)
    print(f"Re-queued {reopened} failed result(s) in {len(snapshot_ids)} snapshot(s).")
    queued, indexed = archive_indexed(snapshots)
    if indexed:
        print(f"Archiving {len(indexed)} snapshot(s) added with --index-only ({queued} result(s) queued).")
    snapshot_ids = sorted({*snapshot_ids, *indexed})
    if args.bg or not snapshot_ids:
        return 0
    done = lambda: not Snapshot.objects.filter(pk__in=snapshot_ids, retry_at__isnull=False).exists()  # noqa: E731
    finished = run_until(done)
    remaining = ArchiveResult.objects.filter(snapshot_id__in=snapshot_ids, status=ArchiveResultGraph.failed).count()
    print(f"Done: {remaining} result(s) still failed." if finished else "Interrupted: the rest continues when workers run.", file=sys.stdout)
    return 0 if finished else 130
