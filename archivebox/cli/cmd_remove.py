"""Remove snapshots from the collection, with their archived folders (unless --keep-files).

Snapshots are chosen as `archivebox list` chooses them (URL patterns with --filter-type,
--url, --tag, --before, --after, --search, --status, --crawl); with no filter at all nothing
is removed. The command lists what it will remove and asks for confirmation (answer `y` on
stdin) unless --yes is given. Snapshots being archived right now are refused unless --force,
which cancels them first (their hooks are stopped) and then removes them.
"""

from __future__ import annotations

import sys
import time

from django.conf import settings

from archivebox.cli import CommandError
from archivebox.cli.cmd_list import add_filter_arguments, filter_of, has_filter, selected
from archivebox.cli.common import setup_django
from archivebox.cli.waiting import run_until
from archivebox.core.models import ArchiveResult
from archivebox.core.urlcheck import mask_urls
from archivebox.tasks.actions import cancel_snapshot, remove_snapshots, running

SHOWN = 10


def register(parser) -> None:
    add_filter_arguments(parser)
    parser.add_argument("--yes", "-y", action="store_true", help="remove without asking for confirmation")
    parser.add_argument("--keep-files", action="store_true", help="keep the snapshots' folders in archive/ (only the index entries go)")
    parser.add_argument("--delete", action="store_true", help="delete the folders too (the default; kept for ArchiveBox compatibility)")
    parser.add_argument("--force", action="store_true", help="cancel snapshots being archived, then remove them")


def confirm(count: int) -> bool:
    print(f"Remove {count} snapshot(s)? [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def run(args) -> int:
    if args.keep_files and args.delete:
        raise CommandError("--keep-files and --delete contradict each other", code=2)
    spec = filter_of(args)
    if not has_filter(args):
        raise CommandError("no filter given: pass URLs or --url/--tag/--before/--after/--search/... (see --help)", code=2)
    setup_django()
    snapshots = selected(spec)
    ids = list(snapshots.values_list("pk", flat=True))
    if not ids:
        print("No snapshot matches.")
        return 1
    busy = running(snapshots.model.objects.filter(pk__in=ids))
    if busy and not args.force:
        raise CommandError(f"{len(busy)} of the {len(ids)} snapshot(s) are being archived right now: wait for them, "
                           "or pass --force to cancel them first")
    print(f"{len(ids)} snapshot(s) match:")
    for snapshot in snapshots[:SHOWN]:
        print(f"  {snapshot.created_at:%Y-%m-%d %H:%M}  {mask_urls(snapshot.url)}")
    if len(ids) > SHOWN:
        print(f"  ... and {len(ids) - SHOWN} more")
    if not args.yes and not confirm(len(ids)):
        print("Nothing removed.")
        return 1
    if busy:
        cancel(busy)
    removed = remove_snapshots(ids, delete_files=not args.keep_files)
    files = f"{removed.folders} folder(s) deleted" if not args.keep_files else f"{len(removed.kept_folders)} folder(s) kept in {settings.ARCHIVE_DIR}"
    print(f"Removed {removed.snapshots} snapshot(s); {files}.")
    return 0


def cancel(ids: list) -> None:
    """Cancel the snapshots and wait (bounded) for their hooks to be stopped and recorded,
    running the pools here if none run elsewhere."""
    for snapshot_id in ids:
        cancel_snapshot(snapshot_id)
    deadline = time.monotonic() + settings.ENGINE.hook_kill_grace + 30
    recorded = lambda: not ArchiveResult.objects.filter(snapshot_id__in=ids, retry_at__isnull=False).exists()  # noqa: E731
    run_until(lambda: recorded() or time.monotonic() > deadline)
    if not recorded():
        print(f"archivebox remove: warning: some hooks of the {len(ids)} cancelled snapshot(s) were not recorded as stopped "
              "in time; removing anyway", file=sys.stderr)
