"""Archive URLs again and again, or update the whole collection, every day, week, month, or on a cron expression.

`archivebox schedule --every=daily [--depth N] [--tag T] [--only-new] [-c KEY=VALUE] URL_OR_FILE` saves a
schedule of those URLs (--add is optional, as in ArchiveBox 0.9); without a URL,
`archivebox schedule --every=day` saves the collection's maintenance: each run does what
`archivebox update` does (failed results retried, never-archived snapshots archived). The
orchestrator of any running worker pool (`archivebox worker`, `archivebox server`,
`archivebox schedule --foreground`, the stock consumers) fires each due schedule exactly
once however many are running, and once to catch up after a downtime. Each run archives
the URLs again (the page over time) unless --only-new. Times are UTC. --clear deletes
every schedule.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from django.utils import timezone

from archivebox.cli import CommandError, cmd_worker
from archivebox.cli.cmd_add import parse_config
from archivebox.cli.common import read_lines, setup_django
from archivebox.core.models import Schedule
from archivebox.core.models.schedule import BadSchedule, cron_of, period_text
from archivebox.core.urlcheck import InvalidURL, check_url
from archivebox.core.urlinput import InputError, candidates
from archivebox.tasks import schedules
from archivebox.tasks.adding import AddError, check_depth, schedule_config


def register(parser) -> None:
    parser.add_argument("import_path", nargs="?", metavar="URL_OR_FILE", help="a URL, or a file of URLs (a list, feed or page); "
                                                                               "none: update the whole collection")
    parser.add_argument("--add", action="store_true", help="add a schedule (implied by --every)")
    parser.add_argument("--every", help="daily (day), weekly, monthly, hourly, yearly, or a cron expression such as '0 */6 * * *' (UTC)")
    parser.add_argument("--depth", "-d", type=int, default=0, help="follow links this many hops (default 0)")
    parser.add_argument("--tag", "-t", default="", help="tags for the snapshots (comma-separated)")
    parser.add_argument("--only-new", action="store_true", default=None, help="each run adds only URLs not archived yet")
    parser.add_argument("--no-only-new", dest="only_new", action="store_false", default=None,
                        help="each run archives the URLs again (the default)")
    parser.add_argument("--config", "-c", action="append", default=[], metavar="KEY=VALUE",
                        help="config of each run's crawl, as `add -c` (e.g. PER_HOST_DELAY=2)")
    parser.add_argument("--show", action="store_true", help="list the schedules")
    parser.add_argument("--clear", action="store_true", help="delete every schedule")
    parser.add_argument("--run-all", action="store_true", help="run every schedule now, once (their next runs stay)")
    parser.add_argument("--foreground", "-f", action="store_true",
                        help="then run the worker pools here until Ctrl-C (they fire the schedules; as `archivebox worker`)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


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
    say = (lambda *a, **k: None) if args.quiet else print
    args.add = args.add or bool(args.every)
    if not (args.add or args.show or args.clear or args.run_all or args.foreground):
        args.show = True
    if args.add:
        if not args.every:
            raise CommandError("--add needs --every=PERIOD (and a URL or file, or none to update the whole collection)", code=2)
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
        say(f"Deleted {count} schedule(s).")
    if args.add:
        add(args, config, say)
    if args.run_all:
        run_all(say)
    if args.show:
        show(say)
    if args.foreground:
        return cmd_worker.run(argparse.Namespace(ticks=None, sideeffects=None))
    return 0


def add(args, config: dict, say) -> None:
    urls = urls_of(args.import_path) if args.import_path else []
    schedule = Schedule.objects.create(every=args.every, urls="\n".join(urls), depth=args.depth if urls else 0,
                                       tags_str=args.tag if urls else "", only_new=bool(args.only_new), config=config)
    when = f"{period_text(schedule.every)} ({schedule.cron}, UTC); next run {schedule.next_run_at:%Y-%m-%d %H:%M} UTC [{schedule.pk}]"
    if urls:
        say(f"Scheduled {len(urls)} URL(s) {when}")
    else:
        say(f"Created scheduled maintenance update of the whole collection {when}")


def run_all(say) -> None:
    now = timezone.now()
    enqueued = maintained = 0
    for schedule in Schedule.objects.filter(enabled=True):
        crawl = schedules.fire(schedule, now, force=True)
        if schedule.is_maintenance:
            maintained += 1
            say(f"Ran schedule {schedule.pk}: maintenance update (failed results re-queued, never-archived snapshots queued)")
        else:
            enqueued += crawl is not None
            say(f"Ran schedule {schedule.pk}: " + (f"crawl {crawl.pk} queued" if crawl else "nothing new to archive"))
    say(f"Enqueued {enqueued} scheduled crawl(s) immediately." + (f" Ran {maintained} scheduled maintenance update(s)." if maintained else ""))
    if enqueued or maintained:
        print("Workers archive them (`archivebox worker`, `archivebox run`, or see `archivebox status`).", file=sys.stderr)


def show(say) -> None:
    rows = list(Schedule.objects.all())
    if not rows:
        say("No schedules.")
    for s in rows:
        lines = s.urls.splitlines()
        what = (lines[0] + (f" (+{len(lines) - 1} more)" if len(lines) > 1 else "")) if lines else "update the whole collection"
        say(f"{s.pk}  {period_text(s.every):<10} next {s.next_run_at:%Y-%m-%d %H:%M} UTC  runs {s.runs}  "
            f"depth {s.depth}{'  only-new' if s.only_new else ''}{'  disabled' if not s.enabled else ''}"
            f"{''.join(f'  {k}={v}' for k, v in (s.config or {}).items())}  {what}")
