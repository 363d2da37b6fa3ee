"""Per-snapshot index files, written atomically (write to a temp file, then rename)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from archivebox.core.models import Snapshot
from archivebox.sideeffects.queue import sideeffect

logger = logging.getLogger(__name__)


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


def snapshot_index(snapshot: Snapshot) -> dict:
    results = [
        {
            "plugin": r.plugin, "hook_name": r.hook_name, "status": r.status, "output_str": r.output_str,
            "output_json": r.output_json, "attempts": r.attempts,
            "started_at": r.started_at.isoformat() if r.started_at else None,
            "finished_at": r.finished_at.isoformat() if r.finished_at else None,
        }
        for r in snapshot.results.order_by("step", "hook_name")
    ]
    return {
        "id": str(snapshot.id), "url": snapshot.url, "title": snapshot.title, "status": snapshot.status,
        "depth": snapshot.depth, "crawl_id": str(snapshot.crawl_id),
        "tags": sorted(snapshot.tags.values_list("name", flat=True)),
        "created_at": snapshot.created_at.isoformat(), "results": results,
    }


@sideeffect
def write_index(snapshot_id) -> None:
    snapshot = Snapshot.objects.filter(pk=snapshot_id).first()
    if snapshot is None:
        return
    data = json.dumps(snapshot_index(snapshot), indent=2, sort_keys=True).encode()
    atomic_write(snapshot.output_dir / "index.json", data)
