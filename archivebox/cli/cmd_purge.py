"""Delete what is older than a duration: task-monitor rows, exited Process rows and their log files.

Example: `archivebox purge --older-than 7d` (units: s, m, h, d, w; e.g. 12h, 30m, 1d12h).
Snapshots, results and archived files are never touched; files of originals kept after their
snapshots were removed (warc/kept/) go once no other snapshot's revisit refers to them.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from archivebox.cli import CommandError
from archivebox.cli.common import setup_django
from archivebox.web.purge import human_bytes, parse_duration, purge


def register(parser) -> None:
    parser.add_argument("--older-than", required=True, metavar="DURATION", help="e.g. 7d, 12h, 30m")
    parser.add_argument("--dry-run", action="store_true", help="only report what would be deleted")


def run(args) -> int:
    try:
        age = parse_duration(args.older_than)
    except ValueError as err:
        raise CommandError(f"--older-than: {err}", code=2) from None
    setup_django()
    cutoff = timezone.now() - age
    report = purge(cutoff, settings.LOGS_DIR, dry_run=args.dry_run)
    verb = "Would delete" if args.dry_run else "Deleted"
    print(f"{verb} everything older than {args.older_than} (before {cutoff:%Y-%m-%d %H:%M:%S} UTC):")
    print(f"  task monitor: {report.monitor_tasks} task(s), {report.monitor_signals} signal(s)")
    print(f"  processes:    {report.processes} exited Process row(s)")
    print(f"  log files:    {report.log_files} file(s), {human_bytes(report.log_bytes)}")
    print(f"  web archive:  {report.kept_warcs} kept WARC file(s) no revisit refers to any more, "
          f"{human_bytes(report.kept_warc_bytes)}")
    if report.skipped_logs:
        print(f"  kept {len(report.skipped_logs)} log path(s) outside {settings.LOGS_DIR} (not deleted)")
    return 0
