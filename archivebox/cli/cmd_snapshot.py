"""Manage Snapshot records as JSONL (ArchiveBox 0.9's `archivebox snapshot`): create, list, update, delete.

`archivebox snapshot create URL...` (or URLs, Crawl or Snapshot records on stdin) makes a
snapshot of each URL: of a piped Crawl record, one per URL of that crawl; of plain URLs,
in one new crawl (--depth: how many hops its crawl follows from them). Other records pass
along unchanged. `list` takes every filter and format of `archivebox list` and prints
Snapshot records when piped; `update` (--status, --tag) and `delete` (--yes, --dry-run)
act on the Snapshot records read from stdin. Snapshots are archived by the workers
(`archivebox run` waits for the ones piped to it).
"""

from __future__ import annotations

from django.conf import settings

from archivebox.cli import CommandError, cmd_list, records
from archivebox.cli.cmd_remove import cancel
from archivebox.cli.common import setup_django
from archivebox.core.graphs import SnapshotGraph
from archivebox.core.models import Crawl, Snapshot, Tag
from archivebox.core.urlcheck import InvalidURL, check_url
from archivebox.core.urlinput import Seed
from archivebox.core.reads import owner_layers
from archivebox.hooks.catalog import catalog
from archivebox.sideeffects.crawl import create_snapshots
from archivebox.tasks import actions
from archivebox.tasks.adding import AddError, AddOptions, add
from archivebox.tasks.dispatch import wake_rows


def register(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="create snapshots of URLs, or of piped Crawl records")
    create.add_argument("urls", nargs="*", metavar="URL")
    create.add_argument("--tag", "-t", default="", help="comma-separated tags to add")
    create.add_argument("--status", "-s", default="queued", help="initial status (only queued: the engine moves it on)")
    create.add_argument("--depth", "-d", type=int, default=0, help="for plain URLs: follow links this many hops (default 0)")
    listing = sub.add_parser("list", help="list snapshots as JSONL (the filters and formats of `archivebox list`)")
    cmd_list.add_filter_arguments(listing, default_filter_type="substring")
    cmd_list.add_output_arguments(listing)
    update = sub.add_parser("update", help="change the snapshots read from stdin")
    update.add_argument("--status", "-s", help="queued: archive again (every enabled plugin); sealed/failed: cancel if unfinished")
    update.add_argument("--tag", "-t", help="add this tag")
    delete = sub.add_parser("delete", help="delete the snapshots read from stdin, with their folders")
    delete.add_argument("--yes", "-y", action="store_true", help="delete (without it nothing is deleted)")
    delete.add_argument("--dry-run", action="store_true", help="only show what would be deleted")


def run(args) -> int:
    if args.action == "list":
        return cmd_list.show(args, default=cmd_list.RECORDS)
    return {"create": create, "update": update, "delete": delete}[args.action](args)


def tag_names(value) -> list[str]:
    if isinstance(value, list):
        return [str(t).strip() for t in value if str(t).strip()]
    return [t.strip() for t in str(value or "").split(",") if t.strip()]


def add_tags(snapshots: list[Snapshot], names: list[str]) -> None:
    if not names or not snapshots:
        return
    tags = [Tag.objects.get_or_create(name=name[:100])[0] for name in dict.fromkeys(names)]
    through = Snapshot.tags.through
    through.objects.bulk_create([through(snapshot_id=s.pk, tag_id=t.pk) for s in snapshots for t in tags], ignore_conflicts=True)


def of_crawl(crawl: Crawl, tags: list[str]) -> list[Snapshot]:
    """The snapshots of the crawl's URLs (made now unless its start made them already; a
    finished crawl makes none: its snapshots are what it made)."""
    seeds = crawl.seeds
    if not crawl.is_final:
        create_snapshots(crawl, seeds, depth=0)
    made = list(Snapshot.objects.filter(crawl=crawl, url__in=[seed.url for seed in seeds], depth=0))
    add_tags(made, tags)
    return made


def create(args) -> int:
    if args.status != SnapshotGraph.queued:
        raise CommandError(f"--status: a new snapshot starts queued here (the engine moves it on), got {args.status!r}", code=2)
    found = records.read_args_or_stdin(args.urls)
    if not found:
        records.note("No URLs or Crawls provided. Pass URLs as arguments or via stdin.")
        return 1
    setup_django()
    extra = tag_names(args.tag)
    made: list[Snapshot] = []
    passed = 0
    seeds: list[Seed] = []
    for record in found:
        kind = record.get("type", "")
        if kind == records.CRAWL:
            if records.piped():
                records.write(record)
            crawl = crawl_of(record, extra)
            if crawl is not None:
                made += emit(of_crawl(crawl, extra))
        elif kind == records.SNAPSHOT or record.get("url"):
            existing = Snapshot.objects.filter(pk=records.record_id(record)).first() if records.record_id(record) else None
            if existing is not None:
                add_tags([existing], [*tag_names(record.get("tags")), *extra])
                made += emit([existing])
                continue
            try:
                seeds.append(Seed(check_url(str(record.get("url") or "")), str(record.get("title") or ""),
                                  tuple(tag_names(record.get("tags")))))
            except InvalidURL as err:
                records.note(f"Error creating snapshot: {err}")
        else:
            if records.piped():
                records.write(record)
            passed += 1
    if seeds:
        try:
            crawl = add(seeds, AddOptions(depth=args.depth, tags=extra)).crawl
        except AddError as err:
            raise CommandError(str(err), code=2) from None
        made += emit(of_crawl(crawl, extra))
    if not made:
        if passed:
            records.note(f"Passed through {passed} records, no new snapshots")
            return 0
        records.note("No snapshots created")
        return 1
    records.note(f"Created {len(made)} snapshots")
    if not records.piped():
        for snapshot in made:
            records.note(f"  {snapshot.id} {snapshot.url[:60]}")
    return 0


def crawl_of(record: dict, tags: list[str]) -> Crawl | None:
    """The crawl a Crawl record names, or a new one of its URLs."""
    crawl = Crawl.objects.filter(pk=records.record_id(record)).first() if records.record_id(record) else None
    if crawl is not None:
        return crawl
    urls = [line.strip() for line in str(record.get("urls") or "").splitlines() if line.strip() and not line.startswith("#")]
    try:
        seeds = [Seed(check_url(url)) for url in dict.fromkeys(urls)]
        if not seeds:
            return None
        return add(seeds, AddOptions(depth=int(record.get("max_depth") or 0), tags=[str(record.get("tags_str") or ""), *tags],
                                     label=str(record.get("label") or ""))).crawl
    except (InvalidURL, AddError, ValueError) as err:
        records.note(f"Error creating crawl: {err}")
        return None


def emit(snapshots: list[Snapshot]) -> list[Snapshot]:
    if records.piped():
        for snapshot in snapshots:
            records.write(records.snapshot_record(snapshot))
    return snapshots


def snapshots_read() -> list[Snapshot] | None:
    setup_django()
    return records.rows_read(Snapshot.objects.select_related("crawl"), records.SNAPSHOT)


def update(args) -> int:
    if args.status and args.status not in Snapshot.graph.states:
        raise CommandError(f"--status must be queued, started, sealed or failed, got {args.status!r}", code=2)
    snapshots = snapshots_read()
    if snapshots is None:
        return 1
    plugins = catalog(settings.DATA_DIR, settings.PLUGIN_DIRS)
    for snapshot in snapshots:
        if args.status in Snapshot.graph.finals:
            actions.cancel_snapshot(snapshot.pk)
        elif args.status:
            if snapshot.is_final:
                actions.rerun_plugins([snapshot.pk], sorted(plugins.enabled_plugins(owner_layers(snapshot.crawl, snapshot))))
            else:
                wake_rows(Snapshot, [snapshot.pk])
        if args.tag:
            add_tags([snapshot], [args.tag])
        snapshot.refresh_from_db()
        if records.piped():
            records.write(records.snapshot_record(snapshot))
    records.note(f"Updated {len(snapshots)} snapshots")
    return 0


def delete(args) -> int:
    snapshots = snapshots_read()
    if snapshots is None:
        return 1
    refused = records.may_delete(snapshots, "snapshots", lambda s: f"{s.id} {s.url[:60]}", args.yes, args.dry_run)
    if refused is not None:
        return refused
    ids = [s.pk for s in snapshots]
    busy = actions.running(Snapshot.objects.filter(pk__in=ids))
    if busy:
        cancel(busy)
    records.note(f"Deleted {actions.remove_snapshots(ids).snapshots} snapshots")
    return 0
