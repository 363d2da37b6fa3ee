"""Reading WARC files: their records with offsets, lengths and what the index keeps of them.

warcio reads; :func:`surt_key` makes the same URL keys pywb's CDX lookups use (the
``surt`` package, as pywb and cdxj-indexer do).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import surt
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import iso_date_to_datetime

INDEXED_TYPES = ("response", "revisit", "resource")
CHUNK = 1 << 16


class BadWarc(ValueError):
    """A file that is not a readable WARC (the message says where it broke)."""


def surt_key(url: str) -> str:
    try:
        return surt.surt(url)
    except (ValueError, TypeError, AttributeError):  # not a URL surt can parse: the URL itself keeps it findable
        return url.lower()


@dataclass
class Entry:
    """One record of a WARC file, as read: where it is and what the index needs."""

    offset: int
    length: int
    record_type: str
    record_id: str
    url: str
    date: dt.datetime
    digest: str
    payload_length: int
    status: int | None
    mime: str
    http_headers: StatusAndHeaders | None
    concurrent_to: str = ""
    refers_to_url: str = ""
    refers_to_date: str = ""

    @property
    def timestamp(self) -> str:
        return self.date.strftime("%Y%m%d%H%M%S")

    @property
    def warc_date(self) -> str:
        return self.date.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    @property
    def indexed(self) -> bool:
        return self.record_type in INDEXED_TYPES and bool(self.url)


def read_entries(path: Path) -> Iterator[Entry]:
    """Every record of a WARC file (gzipped per record or not), payloads read but not kept."""
    try:
        with open(path, "rb") as stream:
            records = ArchiveIterator(stream, no_record_parse=False)
            for record in records:
                if record.format != "warc":  # warcio reads anything it can as ARC: not what a recorder wrote
                    raise BadWarc(f"{path.name}: not a WARC file (a {record.format} record at {records.offset})")
                payload = 0
                while chunk := record.raw_stream.read(CHUNK):
                    payload += len(chunk)
                # (asked before the payload is read, these would read it, leaving none to count)
                yield _entry(record, records.get_record_offset(), records.get_record_length(), payload)
    except (OSError, EOFError, ValueError) as err:
        raise BadWarc(f"{path.name}: {err}") from None
    except Exception as err:  # warcio's ArchiveLoadFailed and its parsers' errors are plain Exceptions
        if type(err).__module__.startswith("warcio"):
            raise BadWarc(f"{path.name}: {err}") from None
        raise


def _entry(record, offset: int, length: int, payload: int) -> Entry:
    headers = record.rec_headers
    http = record.http_headers
    status = None
    mime = ""
    if http is not None and record.rec_type in ("response", "revisit"):
        code = (http.get_statuscode() or "").strip()
        status = int(code) if code.isdigit() else None
        mime = (http.get_header("Content-Type") or "").split(";")[0].strip().lower()
    elif record.rec_type == "resource":
        mime = (headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
    date_text = headers.get_header("WARC-Date") or ""
    try:
        date = iso_date_to_datetime(date_text).replace(tzinfo=dt.timezone.utc)
    except (ValueError, TypeError):
        date = dt.datetime.now(dt.timezone.utc)
    return Entry(offset=offset, length=length, record_type=record.rec_type, record_id=headers.get_header("WARC-Record-ID") or "",
                 url=headers.get_header("WARC-Target-URI") or "", date=date,
                 digest=headers.get_header("WARC-Payload-Digest") or "", payload_length=payload, status=status,
                 mime=mime[:255], http_headers=http, concurrent_to=headers.get_header("WARC-Concurrent-To") or "",
                 refers_to_url=headers.get_header("WARC-Refers-To-Target-URI") or "",
                 refers_to_date=headers.get_header("WARC-Refers-To-Date") or "")


def read_member(path: Path, offset: int, length: int) -> bytes:
    """The bytes of one record as stored (a whole gzip member in a .warc.gz)."""
    with open(path, "rb") as stream:
        stream.seek(offset)
        data = stream.read(length)
    if len(data) != length:
        raise BadWarc(f"{path.name}: record at {offset} is cut short ({len(data)} of {length} bytes)")
    return data


def revisit_bytes(entry: Entry, original_url: str, original_date: str, original_id: str) -> bytes:
    """A gzipped ``revisit`` record (identical-payload-digest profile) standing in for
    ``entry``: its own URL, date, HTTP headers and record id (its request record names that
    id), pointing at the record that holds the payload."""
    from warcio.warcwriter import WARCWriter

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True, warc_version="WARC/1.1")
    extra = {"WARC-Record-ID": entry.record_id, "WARC-Date": entry.warc_date}
    if original_id:
        extra["WARC-Refers-To"] = original_id
    record = writer.create_revisit_record(entry.url, entry.digest, original_url, original_date,
                                          http_headers=entry.http_headers, warc_headers_dict=extra)
    writer.write_record(record)
    return buffer.getvalue()
