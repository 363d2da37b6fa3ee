"""Archive URLs: create a crawl and (unless --bg) run it to the end.

URLs come from the arguments, from --file, or from stdin ("-", or when stdin is not a
terminal and no URL is given). A file or stdin may be a list (one URL per line), prose
with URLs in it, an RSS/Atom feed or an HTML page: its URLs are added. Invalid URLs are
reported one per line and skipped; the valid ones are still added. In the foreground the command returns
when the crawl is sealed, running the worker pools in this process if none are running.
"""

from __future__ import annotations

import sys
import time

from django.conf import settings
from django.utils import timezone

from archivebox.cli import CommandError
from archivebox.cli.common import at_least, read_lines, setup_django
from archivebox.cli.progress import Progress, crawl_counts, pools_alive
from archivebox.config import ConfigError
from archivebox.core.models import ArchiveResult, Crawl
from archivebox.core.urlcheck import InvalidURL, check_url
from archivebox.core.urlinput import InputError, candidates
from archivebox.hooks.catalog import catalog, layers
from archivebox.pools import EmbeddedWorkers
from archivebox.core import rowsql
from archivebox.tasks import registry
from archivebox.tasks.dispatch import kick


def register(parser) -> None:
    parser.add_argument("urls", nargs="*", metavar="URL", help="URLs to archive; '-' reads them from stdin")
    parser.add_argument("--file", "-f", action="append", default=[], help="read URLs from this file, one per line")
    parser.add_argument("--depth", "-d", type=int, default=0, help="follow links this many hops from the given pages (default 0)")
    parser.add_argument("--tag", "-t", action="append", default=[], help="tag the snapshots (repeatable, or comma-separated)")
    parser.add_argument("--config", "-c", action="append", default=[], metavar="KEY=VALUE", help="config for this crawl only")
    parser.add_argument("--label", default="", help="a name for the crawl")
    parser.add_argument("--bg", action="store_true", help="only enqueue; return at once")
    parser.add_argument("--workers", type=int, default=4, help="tick workers when running the pools in this process")


def gather(args) -> list[str]:
    """URL candidates from the arguments, files and stdin (lists, prose, feeds, HTML)."""
    found: list[str] = []
    try:
        for value in args.urls:
            found += candidates(sys.stdin.read()) if value == "-" else [value.strip()]
        for path in args.file:
            found += candidates("\n".join(read_lines(path)))
        if not args.urls and not args.file and not sys.stdin.isatty():
            found += candidates(sys.stdin.read())
    except InputError as err:
        raise CommandError(str(err), code=2) from None
    return [url for url in found if url]


def split_valid(candidates: list[str]) -> tuple[list[str], list[str]]:
    valid: dict[str, None] = {}
    errors = []
    for candidate in candidates:
        try:
            valid[check_url(candidate)] = None
        except InvalidURL as err:
            errors.append(str(err))
    return list(valid), errors


def parse_config(pairs: list[str]) -> dict[str, str]:
    config = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--config expects KEY=VALUE, got {pair!r}", code=2)
        config[key.strip().upper()] = value
    return config


def run(args) -> int:
    if args.depth < 0 or args.depth > 9:
        raise CommandError(f"--depth must be between 0 and 9, got {args.depth}", code=2)
    at_least(args.workers, 1, "--workers")
    setup_django()
    urls, errors = split_valid(gather(args))
    for error in errors:
        print(f"archivebox add: error: invalid URL: {error}", file=sys.stderr)
    if not urls:
        raise CommandError("no valid URL to add" if errors else "no URL given (pass URLs, --file, or pipe them on stdin)", code=2)
    crawl_config = parse_config(args.config)
    plugins = catalog(settings.DATA_DIR, settings.PLUGIN_DIRS)
    try:
        plugins.check_keys(crawl_config)
        plugins.validate(layers(crawl_config=crawl_config, file_values=settings.CONFIG_FILE_VALUES))
    except ConfigError as err:
        raise CommandError(f"invalid config: {err}", code=2) from None
    tags = ",".join(t.strip() for value in args.tag for t in value.split(",") if t.strip())
    crawl = Crawl.objects.create(urls="\n".join(urls), max_depth=args.depth, tags_str=tags, config=crawl_config,
                                 label=args.label, retry_at=timezone.now())
    try:
        kick(registry.get("Crawl"), [(crawl.pk, crawl.retry_at)], settings.ENGINE)
    except Exception as err:  # the crawl is saved; the orchestrator finds it when the queue is back
        print(f"archivebox add: warning: crawl {crawl.pk} is saved, but the task queue did not take it yet "
              f"({type(err).__name__}: {err}); it starts once the queue is reachable", file=sys.stderr)
    if args.bg:
        print(f"Queued crawl {crawl.pk}: {len(urls)} URL(s), depth {args.depth}. Workers will archive it (see `archivebox status`).")
        return 1 if errors else 0
    finished = wait_for(crawl, args.workers)
    crawl.refresh_from_db()
    print_summary(crawl, finished)
    if not finished:
        return 130
    return 1 if errors or crawl.status == "failed" else 0


def crawl_done(crawl_id) -> bool:
    """The crawl is final and so is every result of it (its background hooks are recorded)."""
    if rowsql.values(Crawl, ("retry_at",), {"id": crawl_id})[0][0] is not None:
        return False
    return not ArchiveResult.objects.filter(crawl_id=crawl_id, retry_at__isnull=False).exists()


def wait_for(crawl: Crawl, tick_workers: int) -> bool:
    """Block until the crawl is final; run the pools here unless both already run elsewhere."""
    progress = Progress(crawl, stream=sys.stderr)
    done = lambda: crawl_done(crawl.pk)  # noqa: E731
    if pools_alive():
        while not done():
            progress.update()
            time.sleep(0.25)
        progress.finish()
        return True
    workers = EmbeddedWorkers(tick_workers=tick_workers, sideeffect_workers=16)
    workers.start()
    try:
        finished = workers.run_until(done, progress.update)
    finally:
        progress.finish()
        workers.stop(graceful=True)
    return finished


def print_summary(crawl: Crawl, finished: bool) -> None:
    counts = crawl_counts(crawl)
    elapsed = ((crawl.finished_at or timezone.now()) - crawl.created_at).total_seconds()
    state = crawl.status if finished else f"{crawl.status} (interrupted: it will continue when workers run)"
    print(f"Crawl {crawl.pk}: {state} after {elapsed:.1f}s")
    print(f"  snapshots: {counts.snapshots_done}/{counts.snapshots_total} finished "
          f"({counts.snapshots_by_status.get('sealed', 0)} sealed, {counts.snapshots_by_status.get('failed', 0)} failed)")
    results = counts.results_by_status
    print(f"  results:   {results.get('succeeded', 0)} succeeded, {results.get('failed', 0)} failed, "
          f"{results.get('skipped', 0)} skipped, {results.get('queued', 0) + results.get('started', 0)} unfinished")
    print(f"  archive:   {settings.ARCHIVE_DIR}")
