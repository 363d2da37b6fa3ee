"""A hook's stdout: JSONL parsed as a stream with bounded memory, records applied, bad lines skipped."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from archivebox.core.models import Snapshot, Tag
from archivebox.hooks import output
from archivebox.hooks.output import MAX_LINE, OUTLINK_BATCH, iter_lines, read_report, refused_path

from .util import (
    RssSampler, collection, hook_rows, make_snapshot, results, run_attempt, snapshot_dir, started_result,
)
from helpers import VENV_BIN


def jsonl(*records) -> io.BytesIO:
    return io.BytesIO(b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records))


def parse(stream, tmp_path: Path, **kwargs):
    hook_dir = tmp_path / "snap" / "plugin"
    hook_dir.mkdir(parents=True, exist_ok=True)
    return read_report(stream, hook_dir=hook_dir, snap_dir=tmp_path / "snap", **kwargs)


# The parser ------------------------------------------------------------------------------------

def test_lines_are_split_with_a_length_limit_and_a_missing_final_newline_is_fine():
    stream = io.BytesIO(b"a\r\nb\n" + b"x" * 50 + b"\nlast")
    assert list(iter_lines(stream, max_line=10)) == [b"a", b"b", None, b"last"]
    # a line of exactly max_line bytes is kept
    assert list(iter_lines(io.BytesIO(b"y" * 10 + b"\nz\n"), max_line=10)) == [b"y" * 10, b"z"]


def test_the_last_archive_result_record_wins_and_its_fields_are_kept(tmp_path):
    report = parse(jsonl(
        {"type": "ArchiveResult", "status": "failed", "output_str": "first"},
        {"type": "ArchiveResult", "status": "succeeded", "output_str": "index.html", "output_json": {"size": 3, "files": ["a"]}},
    ), tmp_path)
    assert report.result == {"status": "succeeded", "output_str": "index.html", "output_json": {"size": 3, "files": ["a"]}}
    assert report.records == 2 and report.malformed == report.unknown == 0


@pytest.mark.parametrize("status", ["succeeded", "failed", "skipped", "noresults"])
def test_known_result_statuses_are_kept(tmp_path, status):
    assert parse(jsonl({"type": "ArchiveResult", "status": status}), tmp_path).result["status"] == status


def test_an_unknown_status_is_noted_and_dropped_and_a_non_string_output_str_is_stored_as_json(tmp_path):
    report = parse(jsonl({"type": "ArchiveResult", "status": "great", "output_str": {"a": 1}}), tmp_path)
    assert report.result["status"] is None and report.result["output_str"] == '{"a": 1}'
    assert any("unknown result status 'great'" in n for n in report.notes)


def test_snapshot_records_give_outlinks_in_batches_and_a_title(tmp_path):
    batches = []
    urls = [f"https://example.com/{i}" for i in range(OUTLINK_BATCH * 2 + 7)]
    report = parse(jsonl(*({"type": "Snapshot", "url": u} for u in urls), {"type": "Snapshot", "title": "T" * 2000},
                         {"type": "Snapshot", "url": 5}), tmp_path, on_outlinks=batches.append)
    assert [len(b) for b in batches] == [OUTLINK_BATCH, OUTLINK_BATCH, 7]
    assert [getattr(u, "url", u) for b in batches for u in b] == urls and report.outlinks == len(urls)
    assert report.title == "T" * 1024


def test_tag_records_are_stripped_deduplicated_and_bounded(tmp_path):
    report = parse(jsonl({"type": "Tag", "name": " news "}, {"type": "Tag", "name": "news"}, {"type": "Tag", "name": ""},
                         {"type": "Tag", "name": 3}, *({"type": "Tag", "name": f"t{i}"} for i in range(1200))), tmp_path)
    assert report.tags[0] == "news" and len(report.tags) == output.MAX_TAGS and len(set(report.tags)) == len(report.tags)


def test_malformed_records_and_unknown_types_are_counted_noted_logged_and_skipped_and_text_is_text(tmp_path, engine_logs):
    report = parse(jsonl(
        b"not json", b"\xff\xfe\x00 binary", b"[1, 2]", b'"str"', b'{"no": "type"}', b'{"type": 7}', b'{"type": "Tag",',
        b"z" * (MAX_LINE + 10), b"", b"   ",
        {"type": "Frobnicate"}, {"type": "Tag", "name": "kept"},
        {"type": "ArchiveResult", "status": "succeeded", "output_str": "ok"},
    ), tmp_path, label="demo/hook")
    # Lines that do not start with "{" are text for people (abx-plugins' hooks print some), not records.
    assert report.text == 4 and report.malformed == 4 and report.unknown == 1 and report.records == 3
    assert report.tags == ["kept"] and report.result["status"] == "succeeded"
    assert any("longer than" in n for n in report.notes) and any("unknown record type 'Frobnicate'" in n for n in report.notes)
    assert any("line 5: not a JSON record" in n for n in report.notes) and not any("line 1:" in n for n in report.notes)
    warnings = [r.getMessage() for r in engine_logs.records if r.levelno == logging.WARNING]
    assert "demo/hook: 4 malformed and 1 unknown stdout records skipped" in warnings


def test_text_lines_alone_are_no_cause_for_a_warning(tmp_path, engine_logs):
    report = parse(jsonl(b"wget download started", {"type": "ArchiveResult", "status": "succeeded"}), tmp_path, label="demo/text")
    assert report.text == 1 and report.malformed == 0 and report.result["status"] == "succeeded"
    assert not [r for r in engine_logs.records if r.levelno >= logging.WARNING]


def test_notes_are_bounded_however_much_garbage_a_hook_prints(tmp_path):
    report = parse(io.BytesIO(b"{garbage\n" * 10_000), tmp_path)
    assert report.malformed == 10_000 and len(report.notes) == output.MAX_NOTES
    assert len(json.dumps(report.to_json())) < 20_000


@pytest.mark.parametrize("path, refused", [
    ("index.html", False), ("sub/dir/file.txt", False), ("../other_plugin/out.html", False), ("./a/../b", False),
    ("../../outside.txt", True), ("../../../../etc/passwd", True), ("/etc/passwd", True), ("a/../../../x", True),
    ("404 Not Found", False), ("", False),
])
def test_output_paths_outside_the_snapshot_folder_are_refused(tmp_path, path, refused):
    snap = tmp_path / "snap"
    (snap / "plugin").mkdir(parents=True)
    assert refused_path(path, snap / "plugin", snap) is refused
    # an absolute path inside the snapshot folder is fine
    assert refused_path(str(snap / "plugin" / "x"), snap / "plugin", snap) is False


def test_output_paths_through_symlinks_are_judged_by_where_they_lead(tmp_path):
    snap = tmp_path / "snap"
    hook_dir = snap / "plugin"
    hook_dir.mkdir(parents=True)
    (snap / "other").mkdir()
    (tmp_path / "secret").write_text("x")
    (hook_dir / "escape").symlink_to(tmp_path / "secret")
    (hook_dir / "escape_dir").symlink_to(tmp_path)
    (hook_dir / "sibling").symlink_to(snap / "other")
    (hook_dir / "loop_a").symlink_to(hook_dir / "loop_b")
    (hook_dir / "loop_b").symlink_to(hook_dir / "loop_a")
    assert refused_path("escape", hook_dir, snap) is True
    assert refused_path("escape_dir/secret", hook_dir, snap) is True
    assert refused_path("sibling/file.html", hook_dir, snap) is False
    assert refused_path("loop_a", hook_dir, snap) is True
    # the snapshot folder reached through a symlinked data dir is still inside itself
    (tmp_path / "data_link").symlink_to(tmp_path)
    assert refused_path("index.html", tmp_path / "data_link" / "snap" / "plugin", snap) is False


def test_a_refused_path_fails_the_result_whatever_status_it_claimed(tmp_path):
    report = parse(jsonl({"type": "ArchiveResult", "status": "succeeded", "output_str": "ok.txt", "output_files": ["ok.txt", "/etc/shadow"]}), tmp_path)
    assert report.result["status"] == "failed" and report.result["refused"] is True
    assert report.result["output_str"] == "refused output path outside the snapshot folder: /etc/shadow"


def test_parsing_100_mb_stays_within_bounded_memory(tmp_path):
    """Measured in-process with tracemalloc over a 100 MB file of outlinks, noise, tags and over-long lines."""
    path = tmp_path / "stdout.log"
    outlink = json.dumps({"type": "Snapshot", "url": "https://example.com/" + "p" * 900}).encode() + b"\n"
    noise = json.dumps({"type": "Noise", "pad": "n" * 900}).encode() + b"\n"
    block = (outlink + noise) * 500 + json.dumps({"type": "Tag", "name": "t"}).encode() + b"\n"
    with open(path, "wb") as fh:
        fh.write(b"L" * (3 * MAX_LINE) + b"\n")  # an over-long line first
        while fh.tell() < 100 * 1024 * 1024:
            fh.write(block)
        fh.write(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "big"}).encode() + b"\n")
    size = path.stat().st_size
    assert size >= 100 * 1024 * 1024
    seen = {"links": 0, "largest_batch": 0}

    def sink(batch):
        seen["links"] += len(batch)
        seen["largest_batch"] = max(seen["largest_batch"], len(batch))

    tracemalloc.start()
    try:
        with open(path, "rb") as stream:
            report = parse(stream, tmp_path, on_outlinks=sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.result["status"] == "succeeded" and report.malformed == 1
    assert seen["links"] == report.outlinks > 50_000 and seen["largest_batch"] == OUTLINK_BATCH
    assert report.unknown == report.outlinks and report.tags == ["t"]
    print(f"parser peak {peak / 2**20:.1f} MiB for {size / 2**20:.0f} MiB")
    assert peak < 12 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB while parsing {size / 2**20:.0f} MiB"


# Records applied by the runner -----------------------------------------------------------------

def test_outlinks_become_snapshots_at_depth_plus_one_within_the_max_depth_deduplicated(use_plugins):
    use_plugins("h_links")
    root = make_snapshot("https://example.com/links", max_depth=1)
    process = run_attempt(started_result(root, "h_links", "on_Snapshot__10_links.py"))
    assert process.exit_code == 0 and process.result_json["outlinks"] == 5
    children = {s.url: s for s in Snapshot.objects.filter(crawl=root.crawl).exclude(pk=root.pk)}
    assert set(children) == {"https://example.com/links/a", "https://example.com/links/b", "https://example.com/links/shared"}
    assert all(c.depth == 1 and c.parent_id == root.pk and c.status == "queued" and c.retry_at for c in children.values())
    root.refresh_from_db()
    assert root.title == "Links of https://example.com/links" and [t.name for t in root.tags.all()] == ["depth-0"]

    # a child reports /shared again (already in the crawl) and a grandchild (depth 2 > max depth 1): nothing new
    child = children["https://example.com/links/a"]
    Snapshot.objects.filter(pk=child.pk).update(status="started")
    child.refresh_from_db()
    child.output_dir.mkdir(parents=True, exist_ok=True)
    run_attempt(started_result(child, "h_links", "on_Snapshot__10_links.py"))
    assert Snapshot.objects.filter(crawl=root.crawl).count() == 4
    # the same URL in another crawl is a separate snapshot
    other = make_snapshot("https://example.com/links", max_depth=1)
    run_attempt(started_result(other, "h_links", "on_Snapshot__10_links.py"))
    assert Snapshot.objects.filter(url="https://example.com/links/shared").count() == 2
    assert Tag.objects.filter(name="depth-0").count() == 1


def test_no_outlink_snapshots_at_max_depth_0_or_once_the_crawl_is_final(use_plugins):
    use_plugins("h_links")
    flat = make_snapshot("https://example.com/links", max_depth=0)
    run_attempt(started_result(flat, "h_links", "on_Snapshot__10_links.py"))
    assert Snapshot.objects.filter(crawl=flat.crawl).count() == 1
    deep = make_snapshot("https://example.com/links", max_depth=2)
    type(deep.crawl).objects.filter(pk=deep.crawl.pk).update(status="sealed", retry_at=None)
    run_attempt(started_result(deep, "h_links", "on_Snapshot__10_links.py"))
    assert Snapshot.objects.filter(crawl=deep.crawl).count() == 1


def test_end_to_end_depth_1_follows_deduplicated_outlinks_only_one_hop(tmp_path):
    coll = collection(tmp_path, "h_links")
    coll.cli("add", "--depth", "1", "https://example.com/links")
    snapshots = {s["url"]: s for s in coll.list_json()}
    assert {url: s["depth"] for url, s in snapshots.items()} == {
        "https://example.com/links": 0, "https://example.com/links/a": 1, "https://example.com/links/b": 1,
        "https://example.com/links/shared": 1}
    assert all(s["status"] == "sealed" for s in snapshots.values())
    assert snapshots["https://example.com/links/a"]["title"] == "Links of https://example.com/links/a"
    assert snapshots["https://example.com/links"]["tags"] == ["depth-0"] and snapshots["https://example.com/links/b"]["tags"] == ["depth-1"]
    parents = dict(coll.query("SELECT c.url, p.url FROM core_snapshot c LEFT JOIN core_snapshot p ON c.parent_id = p.id"))
    assert parents["https://example.com/links/shared"] == "https://example.com/links"


def test_end_to_end_garbage_on_stdout_is_skipped_and_the_valid_records_still_apply(tmp_path):
    coll = collection(tmp_path, "h_garbage", LOG_LEVEL="WARNING")
    url = "https://example.com/garbage"
    run = coll.cli("add", url)
    [snapshot] = coll.list_json()
    [result] = snapshot["results"]
    assert (result["status"], result["output_str"]) == ("succeeded", "survived the garbage")
    assert snapshot["tags"] == ["kept"]
    [row] = hook_rows(coll)
    report = json.loads(row["result_json"])
    # 4 lines of text (text, binary, a list, a string: none starts with "{") and 6 bad records: no type, a
    # non-string type, truncated, python repr, a 2 MB line, and the unterminated (and truncated) last line
    assert report["text"] == 4 and report["malformed"] == 6 and report["unknown"] == 1 and report["records"] == 3
    assert "h_garbage/on_Snapshot__10_garbage.py: 6 malformed and 1 unknown stdout records skipped" in run.stderr


@pytest.mark.parametrize("mode, refused", [("inside", False), ("sibling", False), ("dotdot", True), ("absolute", True), ("files", True)])
def test_end_to_end_a_record_pointing_outside_its_folder_fails_the_result(escape_results, mode, refused):
    result = escape_results[(f"https://example.com/escape/{mode}", "on_Snapshot__10_escape.py")]
    if refused:
        assert result["status"] == "failed" and result["output_str"].startswith("refused output path outside the snapshot folder"), result
    else:
        assert result["status"] == "succeeded", result


@pytest.fixture(scope="module")
def escape_results(tmp_path_factory):
    coll = collection(tmp_path_factory.mktemp("escape"), "h_escape")
    coll.cli("add", *(f"https://example.com/escape/{m}" for m in ("inside", "sibling", "dotdot", "absolute", "files")))
    return results(coll)


def test_end_to_end_100_mb_on_stdout_does_not_blow_up_the_worker(tmp_path):
    """A real hook prints 100 MB; the ``add`` process that parses it is sampled with psutil while it runs."""
    def run(mb: str) -> tuple[int, dict, dict]:
        coll = collection(tmp_path / f"mb{mb}", "h_big", H_BIG_MB=mb)
        proc = subprocess.Popen([str(VENV_BIN / "archivebox"), "add", "https://example.com/big"], cwd=coll.root, env=coll.env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        with RssSampler(proc.pid) as sampler:
            out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        [row] = hook_rows(coll)
        return sampler.peak, json.loads(row["result_json"]), json.loads((snapshot_dir(coll, "https://example.com/big") / "h_big" / "counts.json").read_text())

    small_peak, _, _ = run("1")
    big_peak, report, counts = run("100")
    assert counts["bytes"] >= 100 * 1024 * 1024
    assert report["result"]["status"] == "succeeded" and report["unknown"] == counts["noise"] and report["malformed"] == 1
    assert report["tags"] == ["big-0", "big-1", "big-2"]
    growth = big_peak - small_peak
    print(f"peak RSS of the add process: {small_peak / 2**20:.0f} MiB for 1 MB, {big_peak / 2**20:.0f} MiB for 100 MB of stdout")
    assert growth < 40 * 1024 * 1024, f"peak RSS {big_peak / 2**20:.0f} MiB vs {small_peak / 2**20:.0f} MiB for 1 MB"
