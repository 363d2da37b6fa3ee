"""List snapshots (one JSON object per line with --json)."""

from __future__ import annotations

import json

from archivebox.cli import CommandError
from archivebox.cli.common import at_least, parse_uuid, setup_django
from archivebox.core.models import Snapshot

CHUNK = 500


def register(parser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per snapshot per line")
    parser.add_argument("--status", help="only snapshots in this state")
    parser.add_argument("--crawl", help="only snapshots of this crawl id")
    parser.add_argument("--limit", type=int, default=0, help="at most this many (newest first)")


def snapshot_json(snapshot: Snapshot) -> dict:
    return {
        "id": str(snapshot.id),
        "url": snapshot.url,
        "status": snapshot.status,
        "depth": snapshot.depth,
        "title": snapshot.title,
        "tags": sorted(tag.name for tag in snapshot.tags.all()),
        "crawl_id": str(snapshot.crawl_id),
        "created_at": snapshot.created_at.isoformat(),
        "output_dir": snapshot.output_dir_relative,
        "results": [
            {"plugin": r.plugin, "hook_name": r.hook_name, "status": r.status, "output_str": r.output_str, "attempts": r.attempts}
            for r in snapshot.results.all()
        ],
    }


def run(args) -> int:
    at_least(args.limit, 0, "--limit")
    crawl_id = parse_uuid(args.crawl, "--crawl") if args.crawl else None
    if args.status and args.status not in Snapshot.graph.states:
        raise CommandError(f"--status must be one of {', '.join(Snapshot.graph.states)}, got {args.status!r}", code=2)
    setup_django()
    snapshots = Snapshot.objects.order_by("-created_at").prefetch_related("results", "tags")
    if args.status:
        snapshots = snapshots.filter(status=args.status)
    if args.crawl:
        snapshots = snapshots.filter(crawl_id=crawl_id)
    if args.limit:
        snapshots = snapshots[: args.limit]
    for snapshot in snapshots.iterator(chunk_size=CHUNK):
        if args.json:
            print(json.dumps(snapshot_json(snapshot), ensure_ascii=False))
        else:
            print(f"{snapshot.status:8} {snapshot.created_at:%Y-%m-%d %H:%M}  {snapshot.url}  {snapshot.title[:60]}")
    return 0
