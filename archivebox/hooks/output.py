"""Reading what a hook printed: JSONL records on stdout, streamed with bounded memory.

A line that does not start with ``{`` is text the hook printed for people (abx-plugins'
hooks print "download started" and the like, and abx-dl reads such lines as log output):
counted, not parsed. Lines longer than ``MAX_LINE`` bytes, lines that start with ``{`` but
are not JSON objects with a ``type``, and records of unknown types are logged and
skipped; they never stop the parse. Outlinks
are handed to a callback in batches, so a hook printing 100 MB of records costs a
fixed amount of memory. The hook's own result is the last ``ArchiveResult`` record.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

logger = logging.getLogger(__name__)

MAX_LINE = 1 << 20
OUTLINK_BATCH = 500
MAX_TAGS = 1000
MAX_NOTES = 20
RESULT_STATUSES = {"succeeded", "failed", "skipped", "noresults"}


@dataclass(frozen=True)
class Outlink:
    """A URL a hook found. ``expand``: an entry of the document itself (a feed item, a line
    of a URL list), archived at the snapshot's own depth rather than one hop further."""

    url: str
    expand: bool = False


@dataclass
class HookReport:
    result: dict | None = None
    title: str | None = None
    tags: list[str] = field(default_factory=list)
    outlinks: int = 0
    records: int = 0
    text: int = 0
    malformed: int = 0
    unknown: int = 0
    notes: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(message[:300])

    def to_json(self) -> dict:
        return {
            "result": self.result, "title": self.title, "tags": self.tags, "outlinks": self.outlinks,
            "records": self.records, "text": self.text, "malformed": self.malformed, "unknown": self.unknown, "notes": self.notes,
        }


def iter_lines(stream: BinaryIO, max_line: int = MAX_LINE) -> Iterator[bytes | None]:
    """Lines of ``stream`` without their newline; ``None`` stands for a line over ``max_line``."""
    while True:
        line = stream.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(max_line + 1)
            yield None
            continue
        yield line.rstrip(b"\r\n")


def refused_path(value, hook_dir: Path, snap_dir: Path) -> bool:
    """True if ``value``, read as a path from the hook's folder, leads outside ``snap_dir``:
    absolute, climbing with ``..``, or through a symlink. (Text that is no path, such as
    "404 Not Found", resolves inside the folder and passes.)"""
    if not isinstance(value, str) or not value or "\x00" in value:
        return False
    resolved = os.path.realpath(os.path.join(hook_dir, value))
    try:
        os.stat(resolved)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return True  # a symlink loop leads nowhere: refused
    inside = os.path.realpath(snap_dir)
    return os.path.commonpath([resolved, inside]) != inside


def read_report(stream: BinaryIO, *, hook_dir: Path, snap_dir: Path,
                on_outlinks: Callable[[list[Outlink]], None] = lambda links: None, label: str = "hook") -> HookReport:
    """Parse a hook's stdout into a :class:`HookReport`, applying outlinks as they stream past."""
    report = HookReport()
    batch: list[str] = []
    for number, line in enumerate(iter_lines(stream), start=1):
        if line is None:
            report.malformed += 1
            report.note(f"line {number}: longer than {MAX_LINE} bytes, skipped")
            continue
        if not line.strip():
            continue
        if not line.lstrip().startswith(b"{"):
            report.text += 1  # a line for people, not a record
            continue
        record = _parse(line)
        if record is None:
            report.malformed += 1
            report.note(f"line {number}: not a JSON record: {line[:80]!r}")
            continue
        report.records += 1
        kind = record["type"]
        if kind == "ArchiveResult":
            report.result = _result(record, hook_dir, snap_dir, report)
        elif kind == "Snapshot" and isinstance(record.get("url"), str):
            batch.append(Outlink(record["url"], record.get("expand") is True))
            report.outlinks += 1
            if len(batch) >= OUTLINK_BATCH:
                on_outlinks(batch)
                batch = []
        elif kind == "Snapshot":
            if isinstance(record.get("title"), str):
                report.title = record["title"][:1024]
        elif kind == "Tag":
            name = record.get("name")
            if isinstance(name, str) and name.strip() and len(report.tags) < MAX_TAGS and name.strip() not in report.tags:
                report.tags.append(name.strip()[:100])
        else:
            report.unknown += 1
            report.note(f"line {number}: unknown record type {kind!r}")
    if batch:
        on_outlinks(batch)
    if report.malformed or report.unknown:
        logger.warning("%s: %d malformed and %d unknown stdout records skipped", label, report.malformed, report.unknown)
    return report


def _parse(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        return None
    return record


def _result(record: dict, hook_dir: Path, snap_dir: Path, report: HookReport) -> dict:
    status = record.get("status")
    output_str = record.get("output_str", "")
    result = {
        "status": status if status in RESULT_STATUSES else None,
        "output_str": output_str if isinstance(output_str, str) else json.dumps(output_str)[:1000],
        "output_json": record.get("output_json"),
    }
    # A site that said "slow down" (hooks/outcome.py: rate_limit): its HTTP status and Retry-After.
    if isinstance(record.get("http_status"), int) and not isinstance(record.get("http_status"), bool):
        result["http_status"] = record["http_status"]
    if isinstance(record.get("retry_after"), (str, int, float)) and not isinstance(record.get("retry_after"), bool):
        result["retry_after"] = str(record["retry_after"])[:100]
    if status is not None and status not in RESULT_STATUSES:
        report.note(f"unknown result status {status!r}")
    candidates = [output_str, *(record.get("output_files") or [])] if isinstance(record.get("output_files"), list) else [output_str]
    refused = [c for c in candidates if refused_path(c, hook_dir, snap_dir)]
    if refused:
        result["status"] = "failed"
        result["output_str"] = f"refused output path outside the snapshot folder: {refused[0]}"[:1000]
        result["refused"] = True
        report.note(result["output_str"])
    return result
