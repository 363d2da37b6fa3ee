"""Per-snapshot index files, written atomically (write to a temp file, then rename)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from django.conf import settings

from archivebox.core.models import ArchiveResult, Snapshot, Tag
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


RESULT_FIELDS = ("plugin", "hook_name", "status", "output_str", "output_json", "attempts", "started_at", "finished_at")


def snapshot_index(snapshot: dict, results: list[dict], tags: list[str]) -> dict:
    for result in results:
        for key in ("started_at", "finished_at"):
            result[key] = result[key].isoformat() if result[key] else None
    return {
        "id": str(snapshot["id"]), "url": snapshot["url"], "title": snapshot["title"], "status": snapshot["status"],
        "depth": snapshot["depth"], "crawl_id": str(snapshot["crawl_id"]), "tags": sorted(tags),
        "created_at": snapshot["created_at"].isoformat(), "results": results,
    }


@sideeffect
def write_index(snapshot_id) -> None:
    snapshot = Snapshot.objects.filter(pk=snapshot_id).values("id", "url", "title", "status", "depth", "crawl_id", "created_at").first()
    if snapshot is None:
        return
    results = list(ArchiveResult.objects.filter(snapshot_id=snapshot_id).order_by("step", "hook_name").values(*RESULT_FIELDS))
    tags = list(Tag.objects.filter(snapshots=snapshot_id).values_list("name", flat=True))
    data = json.dumps(snapshot_index(snapshot, results, tags), sort_keys=True, separators=(",", ":")).encode()
    atomic_write(settings.ARCHIVE_DIR / str(snapshot_id) / "index.json", data)
