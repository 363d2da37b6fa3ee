"""ArchiveBox 0.9's command line, as users' scripts call it: record commands that pipe into
each other as JSONL, and the commands and options ArchiveBox 0.9.73 has (version, help,
shell, init --quick, install --dry-run, add --overwrite, config --set with several keys,
server --daemonize, search --filter-type/--html, update with filters, schedule --every=day
without a URL, status with sizes). Names, record fields, messages and exit codes are
ArchiveBox's; the collection is this engine's.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request

import pytest

from helpers import Collection, wait_until


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]


def lines(records: list[dict]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


@pytest.fixture
def coll(tmp_path):
    return Collection(tmp_path / "data", plugins="noop").init()


def test_crawl_create_pipes_into_snapshot_create_and_run(coll):
    made = coll.cli("crawl", "create", "--depth=1", "--tag=news,tech", "https://example.com/a", "https://example.com/b")
    assert "Created crawl with 2 URLs" in made.stderr
    [crawl] = jsonl(made.stdout)
    assert (crawl["type"], crawl["max_depth"], crawl["status"], crawl["tags_str"]) == ("Crawl", 1, "queued", "news,tech")
    assert crawl["urls"].split("\n") == ["https://example.com/a", "https://example.com/b"]

    snapped = coll.cli("snapshot", "create", input=made.stdout)
    records = jsonl(snapped.stdout)
    assert [r["type"] for r in records] == ["Crawl", "Snapshot", "Snapshot"] and "Created 2 snapshots" in snapped.stderr
    snapshots = records[1:]
    assert {s["url"] for s in snapshots} == {"https://example.com/a", "https://example.com/b"}
    assert all(s["crawl_id"] == crawl["id"] and s["tags"] == "news,tech" and s["status"] == "queued" for s in snapshots)

    ran = coll.cli("run", input=snapped.stdout, timeout=240)
    assert "Processing 3 records" in ran.stderr
    assert [r["id"] for r in jsonl(ran.stdout)] == [r["id"] for r in records]  # passed on for the next command
    # run returned once the crawl and its snapshots were finished.
    listed = jsonl(coll.cli("snapshot", "list", "--status=sealed").stdout)
    assert {s["id"] for s in listed} == {s["id"] for s in snapshots}
    results = jsonl(coll.cli("archiveresult", "list", "--plugin=noop").stdout)
    assert len(results) == 2 and all(r["status"] == "succeeded" and r["output_str"] == "noop" for r in results)
    assert {r["snapshot_id"] for r in results} == {s["id"] for s in snapshots}
    assert jsonl(coll.cli("crawl", "list", "--status=sealed").stdout)[0]["id"] == crawl["id"]


def test_records_of_other_types_pass_through_and_exit_codes(coll):
    tag = {"type": "Tag", "id": "fake-tag-id", "name": "test"}
    made = coll.cli("crawl", "create", input=lines([tag, {"url": "https://example.com/c"}]))
    types = [r["type"] for r in jsonl(made.stdout)]
    assert types == ["Tag", "Crawl"]
    crawl = jsonl(made.stdout)[1]
    again = coll.cli("crawl", "create", input=lines([crawl]))
    assert jsonl(again.stdout) == [crawl]  # an existing crawl passes through unchanged
    assert coll.cli("crawl", "create", check=False, input="").returncode == 1
    assert coll.cli("crawl", "create", "not a url", check=False).returncode == 1

    assert "Listed 1 crawls" in coll.cli("crawl", "list").stderr
    coll.cli("crawl", "create", "https://example.com/d")
    assert len(jsonl(coll.cli("crawl", "list", "--limit=1").stdout)) == 1
    assert len(jsonl(coll.cli("crawl", "list", "--urls__icontains=example.com/c").stdout)) == 1

    updated = coll.cli("crawl", "update", "--max-depth=2", input=lines([crawl]))
    assert "Updated 1 crawls" in updated.stderr and jsonl(updated.stdout)[0]["max_depth"] == 2

    refused = coll.cli("crawl", "delete", input=lines([crawl]), check=False)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    dry = coll.cli("crawl", "delete", "--dry-run", input=lines([crawl]))
    assert "Would delete 1 crawls (dry run)" in dry.stderr
    assert "Deleted 1 crawls" in coll.cli("crawl", "delete", "--yes", input=lines([crawl])).stderr
    assert [r["id"] for r in jsonl(coll.cli("crawl", "list").stdout)] != [crawl["id"]]


def test_run_passes_unknown_records_on_and_is_done_with_no_records(coll):
    unknown = coll.cli("run", input=lines([{"type": "Unknown", "id": "x", "data": "test"}]))
    assert jsonl(unknown.stdout) == [{"type": "Unknown", "id": "x", "data": "test"}] and "No records to process" in unknown.stderr
    assert coll.cli("run", input="").returncode == 0


def test_snapshot_list_filters(coll):
    coll.cli("add", "--index-only", "--tag=old", "https://example.com/one", "https://example.org/two")
    listed = jsonl(coll.cli("snapshot", "list").stdout)
    assert len(listed) == 2 and all(r["type"] == "Snapshot" and r["tags"] == "old" for r in listed)
    one = next(r for r in listed if r["url"].endswith("/one"))
    assert [r["url"] for r in jsonl(coll.cli("snapshot", "list", "--url__icontains=example.org").stdout)] == ["https://example.org/two"]
    assert [r["url"] for r in jsonl(coll.cli("snapshot", "list", "--url__istartswith=https://example.com").stdout)] == [one["url"]]
    assert [r["url"] for r in jsonl(coll.cli("snapshot", "list", "--sort=url", "--limit=1").stdout)] == [one["url"]]
    assert [r["url"] for r in jsonl(coll.cli("snapshot", "list", "--search=meta", "two").stdout)] == ["https://example.org/two"]
    assert [r["url"] for r in jsonl(coll.cli("snapshot", "list", "-f", "timestamp", one["timestamp"]).stdout)] == [one["url"]]


def test_snapshot_update_and_delete(coll):
    coll.cli("add", "--tag=old", "https://example.com/one", "https://example.org/two", timeout=240)
    one = next(r for r in jsonl(coll.cli("snapshot", "list").stdout) if r["url"].endswith("/one"))
    tagged = coll.cli("snapshot", "update", "--tag=new", input=lines([one]))
    assert "Updated 1 snapshots" in tagged.stderr and jsonl(tagged.stdout)[0]["tags"] == "new,old"
    # queued: archived again (its hooks run again), then run waits for it.
    requeued = coll.cli("snapshot", "update", "--status=queued", input=lines([one]))
    assert jsonl(requeued.stdout)[0]["status"] == "queued"
    coll.cli("run", input=requeued.stdout, timeout=240)
    [noop] = jsonl(coll.cli("archiveresult", "list", f"--snapshot-id={one['id']}").stdout)
    assert (noop["status"], noop["attempts"]) == ("succeeded", 2)

    assert "Would delete 1 snapshots" in coll.cli("snapshot", "delete", "--dry-run", input=lines([one])).stderr
    assert coll.cli("snapshot", "delete", input=lines([one]), check=False).returncode == 1
    assert "Deleted 1 snapshots" in coll.cli("snapshot", "delete", "--yes", input=lines([one])).stderr
    assert not (coll.root / one["output_dir"]).exists()
    assert [r["url"] for r in jsonl(coll.cli("snapshot", "list").stdout)] == ["https://example.org/two"]


def test_archiveresult_requests_run_again_update_and_delete(coll):
    coll.cli("add", "https://example.com/r", timeout=240)
    [snapshot] = jsonl(coll.cli("snapshot", "list").stdout)
    asked = coll.cli("archiveresult", "create", "--plugin=noop", input=lines([snapshot, {"type": "Tag", "name": "x"}]))
    records = jsonl(asked.stdout)
    assert [r["type"] for r in records] == ["Snapshot", "Tag", "ArchiveResult"]
    assert records[2] == {"type": "ArchiveResult", "snapshot_id": snapshot["id"], "plugin": "noop",
                          "hook_name": "on_Snapshot__10_noop.sh", "status": "queued"}
    assert "Created 1 extraction request records" in asked.stderr
    coll.cli("run", input=lines(records[2:]), timeout=240)
    [result] = jsonl(coll.cli("archiveresult", "list").stdout)
    assert result["attempts"] == 2 and result["status"] == "succeeded"
    assert jsonl(coll.cli("archiveresult", "list", "--status=failed").stdout) == []
    assert coll.cli("archiveresult", "update", "--status=succeeded", input=lines([result]), check=False).returncode == 2
    assert "Deleted 1 archive results" in coll.cli("archiveresult", "delete", "--yes", input=lines([result])).stderr
    assert jsonl(coll.cli("archiveresult", "list").stdout) == []


def test_version_help_and_shell(tmp_path, coll):
    assert coll.cli("version", "--quiet").stdout.strip() == coll.cli("--version").stdout.strip()
    full = coll.cli("version").stdout
    assert "ARCH=" in full and "Data locations" in full and "Binary dependencies" in full
    empty = tmp_path / "empty"
    empty.mkdir()
    assert Collection(empty).cli("version", "-q").stdout.strip()
    assert coll.cli("version", "--nope", check=False).returncode == 2
    helped = coll.cli("help").stdout
    assert "init" in helped and "add" in helped and "snapshot" in helped
    assert "shell-ok" in coll.cli("shell", "-c", "print('shell-ok')").stdout
    count = coll.cli("shell", "-c", "from archivebox.core.models import Snapshot; print(Snapshot.objects.count())").stdout
    assert count.strip().splitlines()[-1] == "0"


def test_search_and_list_take_archivebox_options(coll):
    coll.cli("add", "--index-only", "https://iana.org/", "https://example.com/page")
    every = json.loads(coll.cli("search", "--json").stdout)
    assert {row["url"] for row in every} == {"https://iana.org/", "https://example.com/page"}
    wrapped = json.loads(coll.cli("search", "--json", "--with-headers").stdout)
    assert wrapped["schema"] == "archivebox.index.json" and len(wrapped["links"]) == 2
    assert coll.cli("search", "--html").stdout.startswith("<!doctype html>")
    assert coll.cli("search", "--csv", "url", "--with-headers", "--sort=url").stdout.splitlines() == [
        "url", "https://example.com/page", "https://iana.org/"]
    refused = coll.cli("search", "--with-headers", check=False)
    assert refused.returncode == 2 and "requires" in refused.stderr
    assert [r["url"] for r in json.loads(coll.cli("search", "--json", "--filter-type=domain", "iana.org").stdout)] == ["https://iana.org/"]
    assert "https://example.com/page" in coll.cli("search", "example").stdout
    assert coll.cli("search", "nothing-like-this").stdout.startswith("No archived page matches")
    # list's PATTERNs are substrings by default, as in ArchiveBox 0.9.
    assert coll.cli("list", "--csv=url", "example.com").stdout.split() == ["https://example.com/page"]


def test_update_takes_filters_and_schedule_every_day_is_the_collections_update(tmp_path):
    coll = Collection(tmp_path / "data", plugins="h_exit").init()
    coll.cli("add", "https://example.com/a/failed", "https://example.com/b/failed", timeout=240)
    assert coll.scalar("SELECT COUNT(*) FROM core_archiveresult WHERE status = 'failed' AND attempts = 1") == 2
    one = coll.cli("update", "https://example.com/a/failed", timeout=240).stdout
    assert "Re-queued 1 failed result(s) in 1 snapshot(s)" in one
    attempts = dict(coll.query("SELECT s.url, r.attempts FROM core_archiveresult r JOIN core_snapshot s ON s.id = r.snapshot_id"))
    assert attempts == {"https://example.com/a/failed": 2, "https://example.com/b/failed": 1}

    made = coll.cli("schedule", "--every=day").stdout
    assert "Created scheduled maintenance update" in made
    assert tuple(coll.query("SELECT urls, every, cron FROM core_schedule")[0]) == ("", "day", "0 0 * * *")
    assert "update the whole collection" in coll.cli("schedule", "--show").stdout
    ran = coll.cli("schedule", "--run-all").stdout
    assert "Ran 1 scheduled maintenance update(s)" in ran
    # The maintenance re-queued both failures: the workers run them again (stdin is not a
    # terminal here: without --no-stdin, run would read records from it, as ArchiveBox's does).
    coll.cli("run", "--no-stdin", timeout=240)
    attempts = dict(coll.query("SELECT s.url, r.attempts FROM core_archiveresult r JOIN core_snapshot s ON s.id = r.snapshot_id"))
    assert attempts == {"https://example.com/a/failed": 3, "https://example.com/b/failed": 2}


def test_status_reports_the_collections_size(coll):
    coll.cli("add", "https://example.com/s", timeout=240)
    (coll.root / "archive" / "fake_orphaned_dir").mkdir()
    text = coll.cli("status").stdout
    assert "Index size:" in text and "Archive size:" in text and "present: 1, orphaned: 1" in text
    assert "archived: 1, unarchived: 0" in text
    size = json.loads(coll.cli("status", "--json").stdout)["size"]
    folder = next(p for p in (coll.root / "archive").iterdir() if p.name != "fake_orphaned_dir")
    on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
    assert size["archive_bytes"] == on_disk and size["archive_counted"]
    assert size["index_bytes"] >= (coll.root / "index.sqlite3").stat().st_size


def test_install_dry_run_init_quick_and_config_set(tmp_path, coll):
    dry = coll.cli("install", "--dry-run")
    assert dry.returncode == 0 and "dry run" in dry.stdout.lower()
    fresh = Collection(tmp_path / "fresh")
    assert "Initializing a collection" in fresh.cli("install", "--dry-run").stdout
    assert (fresh.root / "index.sqlite3").exists()
    assert coll.cli("init", "--quick").stdout.startswith("Initialized")
    coll.cli("config", "--set", "TIMEOUT=111", "NOOP_TIMEOUT=222")
    text = (coll.root / "ArchiveBox.conf").read_text()
    assert "TIMEOUT = 111" in text and "NOOP_TIMEOUT = 222" in text
    # A key no plugin here has is refused, and nothing is written (this engine's stricter check).
    refused = coll.cli("config", "--set", "TIMEOUT=5", "YTDLP_TIMEOUT=222", check=False)
    assert refused.returncode == 2 and "YTDLP_TIMEOUT" in refused.stderr
    assert "TIMEOUT = 111" in (coll.root / "ArchiveBox.conf").read_text()


def test_add_overwrite_archives_again_despite_only_new(coll):
    coll.cli("config", "--set", "ONLY_NEW=True")
    coll.cli("add", "https://example.com/o", timeout=240)
    skipped = coll.cli("add", "--only-new", "https://example.com/o")
    assert "Nothing to add" in skipped.stdout
    coll.cli("add", "--overwrite", "https://example.com/o", timeout=240)
    assert coll.scalar("SELECT COUNT(*) FROM core_snapshot WHERE url = 'https://example.com/o' AND status = 'sealed'") == 2


def test_server_daemonize_serves_in_the_background(coll):
    started = coll.cli("server", "--daemonize", "--no-workers", "127.0.0.1:0", timeout=120)
    pid = int((coll.root / "logs" / "server.pid").read_text())
    try:
        url = started.stdout.split(" at ")[1].split(" ")[0]
        with urllib.request.urlopen(url + "admin/login/", timeout=30) as response:
            assert response.status == 200 and b"password" in response.read().lower()
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z", timeout=30,
               message="the daemonized server to stop")
