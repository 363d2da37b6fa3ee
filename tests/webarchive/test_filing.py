"""Filing and releasing WARC files, on WARC files written here with warcio (no browser).

In-process, on the session's database: the hook runner's filing step and the release
that remove and re-runs go through, with the edge cases a crawl rarely hits (filing
twice, a rename cut short, a re-run's recording replacing the first, a payload seen twice
in one page load, a broken file).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.db.models import ProtectedError
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archivebox.core.models import Crawl, Snapshot
from archivebox.webarchive import filing
from archivebox.webarchive.models import WarcFile, WarcRecord
from archivebox.webarchive.release import prune_kept, release_files, release_snapshots

IMAGE = os.urandom(5000)
PAGE = b"<html><body>" + b"x" * 1000 + b"</body></html>"


def write_warc(path: Path, responses: list[tuple[str, bytes]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="WARC/1.1")
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "test"}))
        for url, body in responses:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "image/png" if url.endswith(".png") else "text/html"),
                                                  ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            response = writer.create_warc_record(url, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers)
            request = writer.create_warc_record(url, "request", http_headers=StatusAndHeaders(
                f"GET /{url.rsplit('/', 1)[-1]} HTTP/1.1", [("Host", "example.com")], is_http_request=True))
            writer.write_request_response_pair(request, response)
    return path


def snapshot(url: str) -> Snapshot:
    crawl = Crawl.objects.create(urls=url)
    return Snapshot.objects.create(crawl=crawl, url=url)


def record(snap: Snapshot, name: str, responses) -> Path:
    return write_warc(snap.output_dir / "chrome" / "warc" / name, responses)


def types_in(path: Path) -> list[str]:
    with open(path, "rb") as stream:
        return [r.rec_type for r in ArchiveIterator(stream) if r.rec_type in ("response", "revisit")]


def test_a_second_capture_of_the_same_payloads_is_revisits_and_filing_is_idempotent():
    first, second = snapshot("https://example.com/a"), snapshot("https://example.com/b")
    record(first, "1-a.warc.gz", [("https://example.com/a", PAGE), ("https://example.com/i.png", IMAGE)])
    done = filing.file_folder(first, first.output_dir / "chrome")
    assert done.records == 2 and done.revisits == 0
    path = record(second, "2-b.warc.gz", [("https://example.com/b", PAGE), ("https://example.com/i.png", IMAGE),
                                          ("https://example.com/again.png", IMAGE)])
    raw_size = path.stat().st_size
    done = filing.file_folder(second, second.output_dir / "chrome")
    assert done.revisits == 3 and done.bytes_saved == len(PAGE) + 2 * len(IMAGE)
    assert types_in(path) == ["revisit", "revisit", "revisit"] and path.stat().st_size < raw_size - len(IMAGE)
    rows = WarcRecord.objects.filter(snapshot=second)
    assert {row.original.snapshot_id for row in rows} == {first.pk}
    # Filed again (the hook runner's record step retried): nothing changes.
    again = filing.file_folder(second, second.output_dir / "chrome")
    assert again.files == [] and WarcRecord.objects.filter(snapshot=second).count() == 3


def test_a_payload_twice_in_one_page_load_is_stored_once():
    snap = snapshot("https://example.com/twice")
    path = record(snap, "1-t.warc.gz", [("https://example.com/one.png", IMAGE), ("https://example.com/two.png", IMAGE)])
    filing.file_folder(snap, snap.output_dir / "chrome")
    assert types_in(path) == ["response", "revisit"]
    revisit = WarcRecord.objects.get(record_type="revisit")
    assert revisit.original.url == "https://example.com/one.png" and revisit.original.file == revisit.file


def test_a_rename_cut_short_after_the_commit_is_finished():
    first, second = snapshot("https://example.com/a"), snapshot("https://example.com/b")
    record(first, "1-a.warc.gz", [("https://example.com/i.png", IMAGE)])
    filing.file_folder(first, first.output_dir / "chrome")
    path = record(second, "2-b.warc.gz", [("https://example.com/i.png", IMAGE)])
    raw = path.read_bytes()
    filing.file_folder(second, second.output_dir / "chrome")
    filed = path.read_bytes()
    # As if the process died between the commit and the rename: the raw file is back, the
    # rewritten one still in its temp file.
    path.with_name(f".{path.name}.filing").write_bytes(filed)
    path.write_bytes(raw)
    filing.file_folder(second, second.output_dir / "chrome")
    assert path.read_bytes() == filed and types_in(path) == ["revisit"]


def test_a_re_run_replaces_its_recording_and_keeps_what_others_refer_to():
    first, second = snapshot("https://example.com/a"), snapshot("https://example.com/b")
    old = record(first, "1-a.warc.gz", [("https://example.com/i.png", IMAGE)])
    filing.file_folder(first, first.output_dir / "chrome")
    record(second, "2-b.warc.gz", [("https://example.com/i.png", IMAGE)])
    filing.file_folder(second, second.output_dir / "chrome")
    record(first, "3-a.warc.gz", [("https://example.com/i.png", IMAGE)])  # the chrome hook ran again
    filing.file_folder(first, first.output_dir / "chrome")
    assert not old.exists() and WarcFile.objects.filter(snapshot=first).count() == 1
    revisit = WarcRecord.objects.get(snapshot=second)
    assert revisit.original.file.plugin == "kept"  # the image second refers to moved, byte for byte
    kept = Path(settings.DATA_DIR) / revisit.original.file.path
    with open(kept, "rb") as stream:
        stream.seek(revisit.original.offset)
        payloads = [r.content_stream().read() for r in ArchiveIterator(io.BytesIO(stream.read(revisit.original.length)))]
    assert payloads == [IMAGE]


def test_an_original_a_revisit_names_cannot_be_dropped_and_purge_keeps_it():
    first, second = snapshot("https://example.com/a"), snapshot("https://example.com/b")
    record(first, "1-a.warc.gz", [("https://example.com/i.png", IMAGE)])
    filing.file_folder(first, first.output_dir / "chrome")
    record(second, "2-b.warc.gz", [("https://example.com/i.png", IMAGE)])
    filing.file_folder(second, second.output_dir / "chrome")
    with pytest.raises(ProtectedError):
        WarcRecord.objects.filter(snapshot=first).delete()
    released = release_snapshots([first.pk])
    assert released.kept_records == 1 and released.files == 1
    assert prune_kept() == (0, 0)
    release_snapshots([second.pk])
    files, size = prune_kept()
    assert files == 1 and size > len(IMAGE) and not WarcRecord.objects.exists()


def test_a_broken_file_is_left_unfiled_and_said():
    snap = snapshot("https://example.com/broken")
    path = snap.output_dir / "chrome" / "warc" / "1-x.warc.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x1f\x8b not a warc at all")
    done = filing.file_folder(snap, snap.output_dir / "chrome")
    assert done.errors and "1-x.warc.gz" in done.errors[0] and not WarcFile.objects.exists()


def test_release_files_deletes_the_replaced_file_only_when_asked():
    snap = snapshot("https://example.com/a")
    path = record(snap, "1-a.warc.gz", [("https://example.com/a", PAGE)])
    filing.file_folder(snap, snap.output_dir / "chrome")
    release_files(list(WarcFile.objects.all()))
    assert path.exists() and not WarcFile.objects.exists()
