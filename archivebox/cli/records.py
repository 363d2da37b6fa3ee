"""JSONL records, the way ArchiveBox 0.9's record commands pipe into each other.

``archivebox crawl create URL | archivebox snapshot create | archivebox run``: each command
reads lines from stdin (or its arguments), each a JSON object with a ``type`` (``Crawl``,
``Snapshot``, ``ArchiveResult``, or any other, which is passed along unchanged), a plain
URL (a ``Snapshot`` to be), or a snapshot id; and writes one JSON object per line for the
next command. The records have ArchiveBox 0.9's field names and types (``tags`` of a
snapshot is one comma-separated string, times are ISO 8601); see
``docs/archivebox-compat.md`` for what differs.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from archivebox import __version__
from archivebox.core.models import ArchiveResult, Crawl, Snapshot

CRAWL, SNAPSHOT, RESULT = "Crawl", "Snapshot", "ArchiveResult"
# Config values that are secrets are not printed (a persona's cookies file is a path, kept).
SECRET_MARKERS = ("PASSWORD", "SECRET", "TOKEN", "API_KEY")


def parse_line(line: str) -> dict | None:
    """A record from one line: a JSON object, a URL, or a snapshot id; None for anything else."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    if text.startswith("{"):
        try:
            record = json.loads(text)
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
        if "url" in record and "type" not in record:
            record["type"] = SNAPSHOT
        return record
    if text.startswith(("http://", "https://", "file://", "ftp://")):
        return {"type": SNAPSHOT, "url": text}
    try:
        return {"type": SNAPSHOT, "id": str(uuid.UUID(text))}
    except ValueError:
        return None


def read(stream: TextIO | None = None) -> list[dict]:
    """Every record on ``stream`` (stdin); none if it is a terminal."""
    stream = sys.stdin if stream is None else stream
    if stream is None or stream.isatty():
        return []
    return [record for line in stream for record in [parse_line(line)] if record is not None]


def read_args_or_stdin(args: Iterable[str]) -> list[dict]:
    """Records from the arguments (a URL, an id, a JSON object, or a file of them), else stdin."""
    args = list(args)
    if not args:
        return read()
    found = []
    for arg in args:
        path = Path(arg)
        if not arg.startswith(("http://", "https://", "{")) and path.is_file():
            found += [record for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
                      if (record := parse_line(line)) is not None]
        elif (record := parse_line(arg)) is not None:
            found.append(record)
    return found


def write(record: dict, stream: TextIO | None = None) -> None:
    stream = sys.stdout if stream is None else stream
    stream.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    stream.flush()


def piped() -> bool:
    """Records go to stdout only when it is not a terminal (a person gets a summary instead)."""
    return not sys.stdout.isatty()


def note(message: str) -> None:
    """A line for the person at the terminal (stderr), as ArchiveBox prints its summaries."""
    print(message, file=sys.stderr, flush=True)


def rows_read(queryset, kind: str) -> list | None:
    """The rows of ``queryset`` that the ``kind`` records (or bare ids) on stdin name, in their
    order; None (said on stderr) if stdin had no record. Ids not found are named on stderr."""
    found = read()
    if not found:
        note("No records provided via stdin")
        return None
    ids = [pk for record in found if record.get("type", kind) == kind and (pk := record_id(record))]
    by_id = {row.pk: row for row in queryset.filter(pk__in=ids)}
    for pk in ids:
        if pk not in by_id:
            note(f"{kind} not found: {pk}")
    return [by_id[pk] for pk in dict.fromkeys(ids) if pk in by_id]


SHOWN = 10


def may_delete(rows: list, plural: str, describe: Callable[[object], str], yes: bool, dry_run: bool) -> int | None:
    """ArchiveBox's answers before a delete: None to go ahead, else the exit code (nothing
    matched: 0; ``--dry-run``: 0, listing them; no ``--yes``: 1)."""
    if not rows:
        note(f"No matching {plural} found")
        return 0
    if dry_run:
        note(f"Would delete {len(rows)} {plural} (dry run)")
        for row in rows[:SHOWN]:
            note(f"  {describe(row)}")
        if len(rows) > SHOWN:
            note(f"  ... and {len(rows) - SHOWN} more")
        return 0
    if not yes:
        note("Use --yes to confirm deletion")
        return 1
    return None


def record_id(record: dict) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(record.get("id")))
    except (TypeError, ValueError):
        return None


def _time(value) -> str | None:
    return value.isoformat() if value else None


def redacted(config: dict) -> dict:
    return {key: ("********" if any(marker in key.upper() for marker in SECRET_MARKERS) else value) for key, value in (config or {}).items()}


def timestamp_of(snapshot: Snapshot) -> str:
    """ArchiveBox's ``timestamp``: the upgraded snapshot's folder name, else when it was
    bookmarked (else added) as a Unix time."""
    if snapshot.timestamp:
        return snapshot.timestamp
    when = snapshot.bookmarked_at or snapshot.created_at
    return f"{when.timestamp():.6f}" if when else ""


def crawl_record(crawl: Crawl) -> dict:
    return {"type": CRAWL, "schema_version": __version__, "id": str(crawl.id), "urls": crawl.urls, "status": crawl.status,
            "max_depth": crawl.max_depth, "config": redacted(crawl.config), "tags_str": crawl.tags_str, "label": crawl.label,
            "created_at": _time(crawl.created_at), "modified_at": _time(crawl.modified_at)}


def snapshot_record(snapshot: Snapshot, tags: list[str] | None = None) -> dict:
    names = sorted(tag.name for tag in snapshot.tags.all()) if tags is None else sorted(tags)
    return {"type": SNAPSHOT, "schema_version": __version__, "id": str(snapshot.id), "crawl_id": str(snapshot.crawl_id),
            "url": snapshot.url, "title": snapshot.title, "tags": ",".join(names), "bookmarked_at": _time(snapshot.bookmarked_at),
            "created_at": _time(snapshot.created_at), "modified_at": _time(snapshot.modified_at),
            "downloaded_at": _time(snapshot.finished_at), "config": redacted(snapshot.config), "timestamp": timestamp_of(snapshot),
            "depth": snapshot.depth, "status": snapshot.status, "output_dir": snapshot.output_dir_relative}


def result_record(result: ArchiveResult) -> dict:
    record = {"type": RESULT, "schema_version": __version__, "id": str(result.id),
              "snapshot_id": str(result.snapshot_id) if result.snapshot_id else None, "crawl_id": str(result.crawl_id),
              "created_at": _time(result.created_at), "modified_at": _time(result.modified_at), "plugin": result.plugin,
              "hook_name": result.hook_name, "status": result.status, "output_str": result.output_str,
              "start_ts": _time(result.started_at), "end_ts": _time(result.finished_at), "attempts": result.attempts}
    if result.output_json:
        record["output_json"] = result.output_json
    return record
