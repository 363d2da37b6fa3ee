"""Filing a hook's WARC files into the collection's archive: deduplicated, then indexed.

A hook that records (the chrome plugin's recorder, wget with ``WGET_SAVE_WARC``) leaves
``*.warc.gz`` files in its folder's ``warc/``. After the hook's run, before its outcome is
recorded (so a result is final only once its recording is filed), the hook runner calls
:func:`file_folder`, which for each file not filed yet:

1. reads its records (warcio) and looks their payload digests up in the index;
2. writes, if any payload is in the collection already (a record of another file, or an
   earlier one of the same file), the file again with each such ``response`` replaced by
   a ``revisit`` record (identical-payload-digest profile) pointing at the original; other
   records are copied byte for byte (each is its own gzip member), so a file without
   duplicates is not rewritten at all;
3. in one transaction adds the file's :class:`WarcFile` row and its index rows (each
   revisit names its original, a PROTECTed reference), then puts the rewritten file in
   place (a rename);
4. releases the folder's earlier recordings (a re-run's recording replaces them; see
   :func:`archivebox.webarchive.release.release_files`).

Two filings at once: each checks, in the transaction that indexes its file, that no
payload it keeps was indexed meanwhile, and plans again if one was (on SQLite the
transaction holds the write lock, so the payload is then stored once; on Postgres a
narrow race may store it twice, never lose it).

Idempotent: a file whose row exists with its size is filed; one whose rename was cut
short is finished from its temp file. Payloads under DEDUP_MIN_BYTES are kept as they
are (a revisit record is larger than they are).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from archivebox.core.models import Snapshot
from archivebox.webarchive.models import WarcFile, WarcRecord
from archivebox.webarchive.records import BadWarc, Entry, read_entries, read_member, revisit_bytes, surt_key

logger = logging.getLogger(__name__)

WARC_DIR = "warc"
WARC_SUFFIX = ".warc.gz"
DEDUP_MIN_BYTES = 256
PLAN_TRIES = 3
# Postgres: the advisory lock a filing's index transaction holds, so that filings take turns
# there as SQLite's write lock makes them (its key is "WARC" in ASCII).
FILING_LOCK = 0x57415243


@dataclass
class Filed:
    """What filing a folder did."""

    files: list[str] = field(default_factory=list)
    records: int = 0
    revisits: int = 0
    bytes_saved: int = 0
    errors: list[str] = field(default_factory=list)


def relative(path: Path) -> str:
    return path.resolve().relative_to(Path(settings.DATA_DIR).resolve()).as_posix()


def recordings(folder: Path) -> list[Path]:
    """The finished WARC files in ``folder/warc`` (oldest name first)."""
    found = folder / WARC_DIR
    if not found.is_dir():
        return []
    return sorted(p for p in found.iterdir() if p.name.endswith(WARC_SUFFIX) and not p.name.startswith(".") and p.is_file())


def file_folder(snapshot: Snapshot, folder: Path) -> Filed:
    """File the WARC files a hook left in ``folder/warc`` (see the module doc)."""
    from archivebox.webarchive.release import release_files

    done = Filed()
    paths = recordings(folder)
    for path in paths:
        try:
            file_one(snapshot, folder.name, path, done)
        except BadWarc as err:
            logger.warning("snapshot %s: cannot file %s: %s", snapshot.pk, path, err)
            done.errors.append(str(err))
    if paths and not done.errors:
        newest = relative(paths[-1])
        older = WarcFile.objects.filter(snapshot=snapshot, plugin=folder.name).exclude(path=newest)
        if older.exists():
            release_files(list(older), delete_files=True)
    return done


def file_one(snapshot: Snapshot, plugin: str, path: Path, done: Filed) -> WarcFile:
    rel = relative(path)
    temp = path.with_name(f".{path.name}.filing")
    existing = WarcFile.objects.filter(path=rel).first()
    if existing is not None:
        if path.stat().st_size == existing.size:
            return existing
        if temp.exists() and temp.stat().st_size == existing.size:
            os.replace(temp, path)  # the rename after the commit was cut short
            return existing
        raise BadWarc(f"{path.name} changed since it was filed ({path.stat().st_size} bytes, filed {existing.size})")
    entries = list(read_entries(path))
    for attempt in range(1, PLAN_TRIES + 1):
        plan = plan_dedup(entries, rel)
        rewrite = any(step.revisit for step in plan)
        size = write_deduplicated(path, temp, plan) if rewrite else path.stat().st_size
        try:
            with transaction.atomic():
                # Another filing may have indexed one of these payloads since the plan was
                # made: plan again. The check and the inserts are one step for every filing:
                # on SQLite the transaction holds the write lock, on Postgres the filing lock.
                take_turns()
                if attempt < PLAN_TRIES and filed_meanwhile(plan, rel):
                    raise Replan
                warc = index_file(snapshot, plugin, rel, size, plan)
        except Replan:
            temp.unlink(missing_ok=True)
            continue
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        break
    if rewrite:
        os.replace(temp, path)
    done.files.append(rel)
    done.records += warc.records
    done.revisits += warc.revisits
    done.bytes_saved += sum(step.entry.payload_length for step in plan if step.revisit)
    logger.info("snapshot %s: filed %s (%d records, %d revisits)", snapshot.pk, rel, warc.records, warc.revisits)
    return warc


def take_turns() -> None:
    """In a filing's index transaction on Postgres: wait for the other filings' to end (under
    READ COMMITTED, two filings would each miss the other's uncommitted originals and store
    the same payload twice)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [FILING_LOCK])


class Replan(Exception):
    """The index changed under a filing's plan."""


def filed_meanwhile(plan: list["Step"], rel: str) -> bool:
    """Is a payload this plan keeps as an original indexed elsewhere by now?"""
    kept = {step.entry.digest for step in plan if not step.revisit and dedupable(step.entry)}
    return bool(kept) and WarcRecord.objects.filter(digest__in=kept, record_type__in=("response", "resource")).exclude(
        file__path=rel).exists()


@dataclass
class Step:
    """One record of the file being filed: copied as it is, or replaced by a revisit of ``original``."""

    entry: Entry
    revisit: bool = False
    original: WarcRecord | None = None  # an original already indexed
    original_entry: Entry | None = None  # an original earlier in this same file
    new_offset: int = 0
    new_length: int = 0


def dedupable(entry: Entry) -> bool:
    return (entry.record_type in ("response", "resource") and entry.digest
            and entry.payload_length >= DEDUP_MIN_BYTES and entry.status not in (206,))


def plan_dedup(entries: list[Entry], rel: str) -> list[Step]:
    """Which records become revisits, and of what: the oldest indexed record with the same
    payload digest, else the first with it in this file."""
    digests = {e.digest for e in entries if dedupable(e) or (e.record_type == "revisit" and e.digest)}
    known: dict[str, WarcRecord] = {}
    if digests:
        for row in (WarcRecord.objects.filter(digest__in=digests, record_type__in=("response", "resource"))
                    .exclude(file__path=rel).select_related("file").order_by("date", "pk")):
            known.setdefault(row.digest, row)
    first_here: dict[str, Entry] = {}
    plan = []
    for entry in entries:
        step = Step(entry)
        if entry.record_type == "revisit":  # written as a revisit by its recorder: its original, if indexed
            step.original = known.get(entry.digest)
        elif dedupable(entry):
            if entry.digest in known:
                step.revisit, step.original = True, known[entry.digest]
            elif entry.digest in first_here:
                step.revisit, step.original_entry = True, first_here[entry.digest]
            else:
                first_here[entry.digest] = entry
        plan.append(step)
    return plan


def write_deduplicated(path: Path, temp: Path, plan: list[Step]) -> int:
    """Write the file again with revisits in place of duplicate payloads; its size."""
    offset = 0
    with open(path, "rb") as source, open(temp, "wb") as out:
        for step in plan:
            entry = step.entry
            if step.revisit:
                if step.original is not None:
                    data = revisit_bytes(entry, step.original.url, step.original.date.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                                         step.original.warc_record_id)
                else:
                    first = step.original_entry
                    data = revisit_bytes(entry, first.url, first.warc_date, first.record_id)
            else:
                source.seek(entry.offset)
                data = source.read(entry.length)
            out.write(data)
            step.new_offset, step.new_length = offset, len(data)
            offset += len(data)
        out.flush()
        os.fsync(out.fileno())
    return offset


def index_file(snapshot: Snapshot | None, plugin: str, rel: str, size: int, plan: list[Step]) -> WarcFile:
    """The file's row and its index rows (originals first, so that revisits within the file can name them)."""
    for step in plan:
        if not step.new_length:
            step.new_offset, step.new_length = step.entry.offset, step.entry.length
    indexed = [step for step in plan if step.entry.indexed]
    warc = WarcFile.objects.create(path=rel, snapshot=snapshot, plugin=plugin, size=size, records=len(indexed),
                                   revisits=sum(1 for step in indexed if step.revisit or step.entry.record_type == "revisit"))
    rows: dict[int, WarcRecord] = {}
    originals = [step for step in indexed if not step.revisit and step.entry.record_type != "revisit"]
    created = WarcRecord.objects.bulk_create([row_for(warc, snapshot, step, None) for step in originals])
    for step, row in zip(originals, created):
        rows[id(step.entry)] = row
    revisits = []
    for step in indexed:
        if step.entry.record_type == "revisit":
            revisits.append(row_for(warc, snapshot, step, step.original))
            continue
        if not step.revisit:
            continue
        original = step.original if step.original is not None else rows[id(step.original_entry)]
        revisits.append(row_for(warc, snapshot, step, original))
    WarcRecord.objects.bulk_create(revisits)
    return warc


def row_for(warc: WarcFile, snapshot: Snapshot | None, step: Step, original: WarcRecord | None) -> WarcRecord:
    entry = step.entry
    record_type = "revisit" if step.revisit else entry.record_type
    return WarcRecord(file=warc, offset=step.new_offset, length=step.new_length, record_type=record_type,
                      urlkey=surt_key(entry.url), url=entry.url, timestamp=entry.timestamp, date=entry.date,
                      status=entry.status, mime="warc/revisit" if record_type == "revisit" else entry.mime,
                      digest=entry.digest, payload_length=0 if step.revisit else entry.payload_length,
                      warc_record_id=entry.record_id[:100], snapshot=snapshot, original=original)


def read_record_bytes(row: WarcRecord) -> bytes:
    return read_member(Path(settings.DATA_DIR) / row.file.path, row.offset, row.length)
