"""Exporting snapshots as one WACZ 1.1.1 file (py-wacz writes it).

The WACZ holds the snapshots' WARC files as filed (originals and revisits), plus one
more WARC file, ``originals-<time>.warc.gz``, with a copy of each record their revisits
refer to that lives in a WARC file outside the export (another snapshot's, or a kept
one): a revisit always finds its payload inside the WACZ. ``pages/pages.jsonl`` lists
each snapshot's page (its URL, the time its first record was captured, its title), and
py-wacz builds the CDXJ index and ``datapackage.json`` with the files' digests.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from archivebox.core.models import Snapshot
from archivebox.webarchive.lookup import main_record
from archivebox.webarchive.models import WarcFile, WarcRecord
from archivebox.webarchive.records import read_member

logger = logging.getLogger(__name__)


class NothingToExport(ValueError):
    """None of the snapshots has a web archive (no WARC was recorded for them)."""


class ExportFailed(RuntimeError):
    """py-wacz could not write (or validate) the file; the message has its last words."""


@dataclass
class Exported:
    path: Path
    pages: int = 0
    files: int = 0
    records: int = 0
    originals_added: int = 0
    skipped: list[str] = field(default_factory=list)  # snapshots without a web archive


def page_line(snapshot: Snapshot, record: WarcRecord) -> dict:
    return {"id": str(snapshot.pk), "url": record.url, "ts": record.date.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "title": snapshot.title or record.url}


def export_wacz(snapshots, output: Path, title: str = "", description: str = "") -> Exported:
    """Write the snapshots' web archive to ``output`` (replaced atomically); see the module doc."""
    from wacz.main import main as wacz_main

    output = Path(output).resolve()
    done = Exported(output)
    pages = []
    snapshot_ids = []
    for snapshot in snapshots:
        record = main_record(snapshot)
        if record is None:
            done.skipped.append(str(snapshot.pk))
            continue
        pages.append(page_line(snapshot, record))
        snapshot_ids.append(snapshot.pk)
    files = list(WarcFile.objects.filter(snapshot_id__in=snapshot_ids).order_by("path"))
    if not files:
        raise NothingToExport("none of the selected snapshots has a web archive (WARC) to export")
    data_dir = Path(settings.DATA_DIR)
    with tempfile.TemporaryDirectory(prefix=".wacz-", dir=output.parent) as scratch:
        scratch_dir = Path(scratch)
        inputs = unique_names([data_dir / warc.path for warc in files], scratch_dir)
        originals = outside_originals([warc.pk for warc in files])
        if originals:
            inputs.append(str(write_originals(originals, scratch_dir)))
        pages_file = scratch_dir / "pages.jsonl"
        header = {"format": "json-pages-1.0", "id": "pages", "title": title or "ArchiveBox export"}
        pages_file.write_text("\n".join(json.dumps(line) for line in [header, *pages]) + "\n")
        temp_out = scratch_dir / "export.wacz"
        args = ["create", "-o", str(temp_out), "-p", str(pages_file), *inputs]
        if title:
            args += ["--title", title]
        if description:
            args += ["--desc", description]
        run_wacz(wacz_main, args)
        os.replace(temp_out, output)
    done.pages = len(pages)
    done.files = len(inputs)
    done.records = WarcRecord.objects.filter(file__in=files).count()
    done.originals_added = len(originals)
    logger.info("exported %d page(s), %d WARC file(s) to %s", done.pages, done.files, output)
    return done


def unique_names(paths: list[Path], scratch: Path) -> list[str]:
    """The files as py-wacz should read them: a WACZ holds its WARC files by name, so a
    name used twice (wget names its WARC files by time) is given as a link of another name."""
    seen: set[str] = set()
    inputs = []
    for number, path in enumerate(paths):
        name = path.name
        if name in seen:
            link = scratch / f"{number}-{name}"
            link.symlink_to(path)
            path, name = link, link.name
        seen.add(name)
        inputs.append(str(path))
    return inputs


def run_wacz(wacz_main, args: list[str]) -> None:
    """py-wacz's command, in this process (it prints its progress: kept for the log)."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):
            code = wacz_main(args)
    except (OSError, ValueError, KeyError) as err:
        raise ExportFailed(f"wacz {args[0]} failed: {err}") from None
    for line in said.getvalue().splitlines():
        logger.debug("wacz: %s", line)
    if code not in (0, None):
        last = [line for line in said.getvalue().splitlines() if line.strip()]
        raise ExportFailed(f"wacz {args[0]} failed: {last[-1] if last else f'exit code {code}'}")


def validate_wacz(path: Path) -> tuple[bool, str]:
    """``wacz validate``'s verdict on a file, and its last line."""
    from wacz.main import main as wacz_main

    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = wacz_main(["validate", "-f", str(path)])
    lines = [line for line in said.getvalue().splitlines() if line.strip()]
    return code == 0, lines[-1] if lines else ""


def outside_originals(file_ids: list[int]) -> list[WarcRecord]:
    """The originals that revisits in these files refer to and that live in other files."""
    ids = (WarcRecord.objects.filter(file_id__in=file_ids, original__isnull=False)
           .exclude(original__file_id__in=file_ids).values_list("original_id", flat=True).distinct())
    return list(WarcRecord.objects.filter(pk__in=list(ids)).select_related("file").order_by("file_id", "offset"))


def write_originals(records: list[WarcRecord], folder: Path) -> Path:
    """A WARC file with a copy of each record (byte for byte), after a warcinfo record."""
    from warcio.warcwriter import WARCWriter

    now = dt.datetime.now(dt.timezone.utc)
    path = folder / f"originals-{now:%Y%m%d%H%M%S}.warc.gz"
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="WARC/1.1")
        writer.write_record(writer.create_warcinfo_record(path.name, {
            "software": "ArchiveBox engine (export)", "format": "WARC File Format 1.1",
            "description": "Records that the exported revisit records refer to, from WARC files outside the export"}))
        for row in records:
            out.write(read_member(Path(settings.DATA_DIR) / row.file.path, row.offset, row.length))
    return path


def wacz_download_response(snapshot: Snapshot):
    """A WACZ of one snapshot as a download (written to a temp file, unlinked once open)."""
    from django.http import FileResponse

    scratch = Path(settings.DATA_DIR) / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".export-", suffix=".wacz", dir=scratch)
    os.close(fd)
    path = Path(name)
    try:
        export_wacz([snapshot], path, title=snapshot.title or snapshot.url)
        stream = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    finally:
        path.unlink(missing_ok=True)
    return FileResponse(stream, as_attachment=True, filename=f"{snapshot.pk}.wacz", content_type="application/wacz")
