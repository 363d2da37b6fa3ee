"""Per-snapshot index files: ``index.json`` and ``index.html`` in the snapshot's folder.

Both are written atomically (to a temp file, then renamed), so a reader sees the old file
or the new one, never half of one. They are written when the snapshot ends (sealed or
failed), at once, and not while its hooks run: until then they would be files among its
outputs, seen by hooks that read the whole folder (a hash manifest would list them, with
digests the final write makes wrong). A result recorded after the end (a background hook
of a sealed snapshot, a re-run) rewrites them ``DEBOUNCE`` seconds later, the changes of
that window folding into one write (in a pooled thread of the same process; the write at
the next end, which always happens, covers a process that dies first).
"""

from __future__ import annotations

import html
import json
import logging
import mimetypes
import os
import tempfile
import threading
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError

from archivebox.core.models import ArchiveResult, Snapshot, Tag
from archivebox.process.threadpool import ThreadPool, Timers
from archivebox.core import diskspace, rowsql
from archivebox.core.urlcheck import mask_urls, masked_json

logger = logging.getLogger(__name__)

INDEX_FILES = ("index.json", "index.html")
# Long enough that a snapshot done within it is written once, at seal (each write walks its
# folder and renders both files: ~2.5 ms of CPU); short enough that one in progress shows it.
DEBOUNCE = 5.0
SNAPSHOT_FIELDS = ("id", "url", "title", "status", "depth", "crawl_id", "created_at", "finished_at")
RESULT_FIELDS = ("plugin", "hook_name", "status", "output_str", "output_json", "attempts", "started_at", "finished_at")


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def list_outputs(folder: Path) -> list[dict]:
    """Every file under the snapshot folder (but the index files and temp files), with size and type."""
    outputs = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
                continue
            relative = Path(entry.path).relative_to(folder).as_posix()
            if relative in INDEX_FILES or entry.name.startswith("."):
                continue
            mimetype = mimetypes.guess_type(entry.name)[0] or "application/octet-stream"
            outputs.append({"path": relative, "size": entry.stat(follow_symlinks=False).st_size, "mimetype": mimetype})
    return sorted(outputs, key=lambda o: o["path"])


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def snapshot_index(snapshot: dict, results: list[dict], tags: list[str], outputs: list[dict]) -> dict:
    """The index of a snapshot, for people and other tools to read: a URL's credentials are masked."""
    return {
        "id": str(snapshot["id"]), "url": mask_urls(snapshot["url"]), "title": snapshot["title"], "status": snapshot["status"],
        "depth": snapshot["depth"], "crawl_id": str(snapshot["crawl_id"]), "tags": sorted(tags),
        "created_at": _iso(snapshot["created_at"]), "finished_at": _iso(snapshot["finished_at"]),
        "results": [{**r, "output_str": mask_urls(r["output_str"]), "output_json": masked_json(r["output_json"]),
                     "started_at": _iso(r["started_at"]), "finished_at": _iso(r["finished_at"])} for r in results],
        "outputs": outputs,
    }


def render_html(index: dict) -> str:
    """A plain, readable page for people: what was archived, and a link to each output."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(r['plugin'])}</td><td class='{e(r['status'])}'>{e(r['status'])}</td><td>{e(r['output_str'] or '')}</td></tr>"
        for r in index["results"]
    )
    files = "".join(
        f"<li><a href='{e(o['path'])}'>{e(o['path'])}</a> <small>{o['size']:,} bytes, {e(o['mimetype'])}</small></li>"
        for o in index["outputs"]
    )
    title = index["title"] or index["url"]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse}}td,th{{border-bottom:1px solid #ddd;padding:.2rem .6rem;text-align:left}}
.succeeded{{color:#070}}.failed{{color:#b00}}.skipped{{color:#777}}</style></head>
<body><h1>{e(title)}</h1>
<p><a href="{e(index['url'])}">{e(index['url'])}</a> &middot; {e(index['status'])} &middot; archived {e(index['created_at'] or '')}</p>
<p>Tags: {e(', '.join(index['tags'])) or 'none'}</p>
<h2>Results</h2><table><tr><th>plugin</th><th>status</th><th>output</th></tr>{rows}</table>
<h2>Files</h2><ul>{files}</ul>
<p><a href="index.json">index.json</a></p></body></html>
"""


def build_index(snapshot_id) -> tuple[dict, Path] | None:
    found = rowsql.values(Snapshot, SNAPSHOT_FIELDS, {"id": snapshot_id})
    if not found:
        return None
    snapshot = dict(zip(SNAPSHOT_FIELDS, found[0]))
    results = [dict(zip(RESULT_FIELDS, row)) for row in rowsql.values(ArchiveResult, RESULT_FIELDS, {"snapshot": snapshot_id},
                                                                            order_by="step, hook_name")]
    tags = list(Tag.objects.filter(snapshots=snapshot_id).values_list("name", flat=True))
    folder = settings.ARCHIVE_DIR / str(snapshot_id)
    return snapshot_index(snapshot, results, tags, list_outputs(folder)), folder


def write_now(snapshot_id) -> None:
    built = build_index(snapshot_id)
    if built is None:
        return
    index, folder = built
    atomic_write(folder / "index.json", json.dumps(index, sort_keys=True, separators=(",", ":")).encode())
    atomic_write(folder / "index.html", render_html(index).encode())


class Debouncer:
    """Index writes of a running snapshot trail its changes by ``DEBOUNCE`` seconds, and
    the changes of that window fold into one write; the write at seal (final) is at once
    and cancels the pending one. A snapshot done within ``DEBOUNCE`` is written once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pending: set = set()

    def defer(self, snapshot_id) -> None:
        """Write in ``DEBOUNCE`` seconds, unless a write is pending already."""
        with self._lock:
            if snapshot_id in self._pending:
                return
            self._pending.add(snapshot_id)
        TIMERS.call_later(DEBOUNCE, self._trailing_write, snapshot_id)

    def _trailing_write(self, snapshot_id) -> None:
        """The trailing write of a burst, in this process (the write at seal covers a crash)."""
        with self._lock:
            if snapshot_id not in self._pending:
                return  # the final write came first
            self._pending.discard(snapshot_id)
        try:
            write_now(snapshot_id)
        except (OSError, DatabaseError) as err:
            if diskspace.is_disk_full(err):
                diskspace.report(f"the index of snapshot {snapshot_id}", settings.DATA_DIR)
            else:
                logger.exception("index of snapshot %s: trailing write failed", snapshot_id)

    def forget(self, snapshot_id) -> None:
        with self._lock:
            self._pending.discard(snapshot_id)


TIMERS = Timers(ThreadPool("index"))
DEBOUNCER = Debouncer()


def write_index(snapshot_id) -> None:
    """A result of the snapshot was recorded. A finished snapshot (a late background hook, a
    re-run) gets its index rewritten a moment later, with whatever else changes meanwhile. A
    running one gets none until it ends: its index files would be files among its outputs
    while its hooks run (a hook that hashes the folder, such as abx-plugins' hashes, would
    list them, with digests that the final write then makes wrong)."""
    found = rowsql.values(Snapshot, ("status",), {"id": snapshot_id})
    if found and found[0][0] in Snapshot.graph.finals:
        DEBOUNCER.defer(snapshot_id)


def write_final_index(snapshot_id) -> None:
    """The snapshot is sealed or failed: write its index now, whatever was written before."""
    DEBOUNCER.forget(snapshot_id)
    write_now(snapshot_id)
