"""Letting WARC files go without breaking any other snapshot's replay.

A snapshot's WARC files live in its folder, and later captures of the same payloads
(other snapshots') are revisit records pointing at records in them. Before those files
leave the collection (the snapshot is removed, or a re-run's recording replaces them),
:func:`release_files` copies every record that a revisit elsewhere still refers to into
a file of kept originals, ``warc/kept/<timestamp>-<id>.warc.gz`` (byte for byte: each
record is its own gzip member), moves those records' index rows there, and only then
drops the rest of the files' index rows. The index's ``original`` reference is PROTECTed,
so the database itself refuses to drop an original some revisit still names: a filing
that adds such a revisit meanwhile makes the release fail and run again.

:func:`prune_kept` (run by ``archivebox purge``) deletes kept files none of whose
records anything refers to any more.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, ProtectedError

from archivebox.webarchive.models import WarcFile, WarcRecord
from archivebox.webarchive.records import read_member

logger = logging.getLogger(__name__)

KEPT_DIR = "warc/kept"
TRIES = 5


@dataclass
class Released:
    files: int = 0
    kept_records: int = 0
    kept_file: str = ""


def release_snapshots(snapshot_ids) -> Released:
    """Release the WARC files of snapshots about to be removed (see the module doc)."""
    return release_files(list(WarcFile.objects.filter(snapshot_id__in=list(snapshot_ids))))


def release_files(files: list[WarcFile], delete_files: bool = False) -> Released:
    """Drop ``files`` from the index, keeping (in a kept file) each of their records that
    a revisit in another file refers to. ``delete_files``: also delete them from disk (a
    replaced recording; a removed snapshot's folder goes with its snapshot)."""
    done = Released()
    if not files:
        return done
    file_ids = [f.pk for f in files]
    for attempt in range(1, TRIES + 1):
        needed = list(referenced_from_elsewhere(file_ids).select_related("file").order_by("file_id", "offset"))
        kept_path = write_kept(needed) if needed else None
        try:
            with transaction.atomic():
                if kept_path is not None:
                    keep(needed, kept_path)
                WarcRecord.objects.filter(file_id__in=file_ids, original__isnull=False).delete()
                WarcRecord.objects.filter(file_id__in=file_ids).delete()
                done.files = WarcFile.objects.filter(pk__in=file_ids).delete()[1].get(WarcFile._meta.label, 0)
        except (ProtectedError, IntegrityError) as err:  # a revisit of one of them was filed meanwhile
            if kept_path is not None:
                kept_path.unlink(missing_ok=True)
            if attempt == TRIES:
                raise
            logger.info("releasing %d WARC file(s): referred to meanwhile (%s), trying again", len(files), err)
            continue
        done.kept_records = len(needed)
        done.kept_file = relative_to_data(kept_path) if kept_path else ""
        break
    if delete_files:
        for warc in files:
            (Path(settings.DATA_DIR) / warc.path).unlink(missing_ok=True)
    logger.info("released %d WARC file(s); %d record(s) still referred to kept in %s", done.files, done.kept_records,
                done.kept_file or "-")
    return done


def referenced_from_elsewhere(file_ids: list[int]):
    """Records of these files that a revisit in another file names as its original."""
    outside = WarcRecord.objects.filter(original=OuterRef("pk")).exclude(file_id__in=file_ids)
    return WarcRecord.objects.filter(file_id__in=file_ids).filter(Exists(outside))


def relative_to_data(path: Path) -> str:
    return path.resolve().relative_to(Path(settings.DATA_DIR).resolve()).as_posix()


def write_kept(records: list[WarcRecord]) -> Path:
    """A new kept file holding a copy of each record (a warcinfo record first)."""
    from warcio.warcwriter import WARCWriter

    folder = Path(settings.DATA_DIR) / KEPT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)
    path = folder / f"{now:%Y%m%d%H%M%S}-{uuid.uuid4().hex[:12]}.warc.gz"
    temp = path.with_name(f".{path.name}.tmp")
    with open(temp, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="WARC/1.1")
        writer.write_record(writer.create_warcinfo_record(path.name, {
            "software": "ArchiveBox engine (originals kept after their snapshots were removed)",
            "format": "WARC File Format 1.1",
            "description": "Records that revisit records of other snapshots refer to"}))
        for row in records:
            row.kept_offset = out.tell()
            data = read_member(Path(settings.DATA_DIR) / row.file.path, row.offset, row.length)
            out.write(data)
            row.kept_length = len(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    return path


def keep(records: list[WarcRecord], path: Path) -> None:
    kept = WarcFile.objects.create(path=relative_to_data(path), snapshot=None, plugin="kept", size=path.stat().st_size,
                                   records=len(records))
    for row in records:
        WarcRecord.objects.filter(pk=row.pk).update(file=kept, offset=row.kept_offset, length=row.kept_length, snapshot=None)


def prune_kept(dry_run: bool = False) -> tuple[int, int]:
    """Delete the kept files none of whose records any revisit refers to: (files, bytes)."""
    referred = WarcRecord.objects.filter(file=OuterRef("pk"), revisits__isnull=False)
    unused = WarcFile.objects.filter(snapshot__isnull=True, plugin="kept").exclude(Exists(referred))
    files, size = 0, 0
    for warc in unused:
        files += 1
        size += warc.size
        if dry_run:
            continue
        with transaction.atomic():
            WarcRecord.objects.filter(file=warc).delete()
            warc.delete()
        (Path(settings.DATA_DIR) / warc.path).unlink(missing_ok=True)
    return files, size
