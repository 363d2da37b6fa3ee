"""Archive URLs again and again: every day, week, month, or on a cron expression.

`archivebox schedule --add --every=daily [--depth N] [--tag T] [--only-new] [-c KEY=VALUE] URL_OR_FILE`
saves a schedule; the orchestrator of any running worker pool (`archivebox worker`,
`archivebox server`, the stock consumers) starts one crawl per due period, exactly once
however many are running, and one catch-up crawl after a downtime. Each run archives the
URLs again (the page over time) unless --only-new. Times are UTC.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.utils import timezone

from archivebox.cli import CommandError
from archivebox.cli.cmd_add import parse_config
from archivebox.cli.common import read_lines, setup_django
from archivebox.core.models import Schedule
from archivebox.core.models.schedule import BadSchedule, cron_of, period_text
from archivebox.core.urlcheck import InvalidURL, check_url
from archivebox.core.urlinput import InputError, candidates
from archivebox.tasks import schedules
from archivebox.tasks.adding import AddError, check_depth, schedule_config


def register(parser) -> None:
    parser.add_argument("import_path", nargs="?", metavar="URL_OR_FILE", help="a URL, or a file of URLs (a list, feed or page)")
    parser.add_argument("--add", action="store_true", help="add a schedule for URL_OR_FILE")
    parser.add_argument("--every", help="daily, weekly, monthly, hourly, yearly, or a cron expression such as '0 */6 * * *' (UTC)")
    parser.add_argument("--depth", "-d", type=int, default=0, help="follow links this many hops (default 0)")
    parser.add_argument("--tag", "-t", default="", help="tags for the snapshots (comma-separated)")
    parser.add_argument("--only-new", action="store_true", help="each run adds only URLs not archived yet")
    parser.add_argument("--config", "-c", action="append", default=[], metavar="KEY=VALUE",
                        help="config of each run's crawl, as `add -c` (e.g. PER_HOST_DELAY=2)")
    parser.add_argument("--show", action="store_true", help="list the schedules")
    parser.add_argument("--clear", action="store_true", help="delete every schedule")
    parser.add_argument("--run-all", action="store_true", help="run every schedule now, once (their next runs stay)")


def urls_of(value: str) -> list[str]:
    try:
        lines = read_lines(value) if Path(value).is_file() else [value]
        found = candidates("\n".join(lines))
    except InputError as err:
        raise CommandError(str(err), code=2) from None
    urls = []
    for candidate in found:
        try:
            urls.append(check_url(candidate))
        except InvalidURL as err:
            raise CommandError(f"invalid URL: {err}", code=2) from None
    if not urls:
        raise CommandError(f"no URL in {value!r}", code=2)
    return list(dict.fromkeys(urls))


def run(args) -> int:
    if not (args.add or args.show or args.clear or args.run_all):
        args.show = True
    if args.add:
        if not args.every or not args.import_path:
            raise CommandError("--add needs --every=PERIOD and a URL or file", code=2)
        setup_django()
        try:
            cron_of(args.every)
        except BadSchedule as err:
            raise CommandError(str(err), code=2) from None
        try:
            check_depth(args.depth, "--depth")
            config = schedule_config(parse_config(args.config), args.depth)
        except AddError as err:
            raise CommandError(str(err), code=2) from None
    setup_django()
    if args.clear:
        count, _ = Schedule.objects.all().delete()
        print(f"Deleted {count} schedule(s).")
    if args.add:
        urls = urls_of(args.import_path)
        schedule = Schedule.objects.create(every=args.every, urls="\n".join(urls), depth=args.depth,
                                           tags_str=args.tag, only_new=args.only_new, config=config)
        print(f"Scheduled {len(urls)} URL(s) {period_text(schedule.every)} ({schedule.cron}, UTC); next run {schedule.next_run_at:%Y-%m-%d %H:%M} UTC "
              f"[{schedule.pk}]")
    if args.run_all:
        now = timezone.now()
        for schedule in Schedule.objects.filter(enabled=True):
            crawl = schedules.fire(schedule, now, force=True)
            print(f"Ran schedule {schedule.pk}: " + (f"crawl {crawl.pk} queued" if crawl else "nothing new to archive"))
        print("Workers archive the crawls (`archivebox worker`, or see `archivebox status`).", file=sys.stderr)
    if args.show:
        rows = list(Schedule.objects.all())
        if not rows:
            print("No schedules.")
        for s in rows:
            first = s.urls.splitlines()[0] if s.urls else ""
            more = f" (+{len(s.urls.splitlines()) - 1} more)" if len(s.urls.splitlines()) > 1 else ""
            print(f"{s.pk}  {period_text(s.every):<10} next {s.next_run_at:%Y-%m-%d %H:%M} UTC  runs {s.runs}  "
                  f"depth {s.depth}{'  only-new' if s.only_new else ''}{'  disabled' if not s.enabled else ''}"
                  f"{''.join(f'  {k}={v}' for k, v in (s.config or {}).items())}  {first}{more}")
    return 0
