"""Managing a collection from the command line: list (filters, formats), remove, extract.

The CLI runs as a subprocess on a data dir of its own; snapshots come from a real JSONL import.
"""

import csv
import io
import json
import os
import signal
import subprocess

import psutil
import pytest
from helpers import Collection, wait_until

from archivebox import fulltext

RECORDS = [
    {"url": "https://alpha.example.com/one", "title": "Alpha one", "tags": ["news"], "timestamp": "2020-01-01T00:00:00Z"},
    {"url": "https://beta.example.org/two", "title": "Beta two", "tags": ["news", "tech"], "timestamp": "2021-06-01T00:00:00Z"},
    {"url": "https://gamma.example.net/three", "title": "Gamma three", "tags": ["tech"], "timestamp": "2022-12-31T00:00:00Z"},
]


@pytest.fixture
def collection(tmp_path):
    collection = Collection(tmp_path / "data", plugins="noop").init()
    collection.cli("add", input="\n".join(json.dumps(r) for r in RECORDS))
    return collection


def urls(collection, *args):
    return [line for line in collection.cli("list", "--csv", "url", *args).stdout.splitlines() if line.strip()]


def test_list_filters(collection):
    every = {r["url"] for r in RECORDS}
    assert set(urls(collection)) == every
    assert urls(collection, "--url", "BETA.example") == ["https://beta.example.org/two"]
    assert set(urls(collection, "--tag", "tech")) == {"https://beta.example.org/two", "https://gamma.example.net/three"}
    assert urls(collection, "--before", "2020-12-31") == ["https://alpha.example.com/one"]
    assert urls(collection, "--after", "2022-01-01") == ["https://gamma.example.net/three"]
    assert urls(collection, "--after", "1577836800", "--before", "2021-12-31") != []
    assert set(urls(collection, "--after", "1577836800", "--before", "2021-12-31")) == {"https://alpha.example.com/one",
                                                                                       "https://beta.example.org/two"}
    assert urls(collection, "--search", "gamma") == ["https://gamma.example.net/three"]
    assert urls(collection, "-f", "domain", "example.org") == ["https://beta.example.org/two"]
    assert urls(collection, "-f", "regex", r"^https://(alpha|gamma)\.") == ["https://gamma.example.net/three", "https://alpha.example.com/one"]
    assert urls(collection, "https://alpha.example.com/one") == ["https://alpha.example.com/one"]
    assert urls(collection, "--sort", "url") == sorted(every)
    assert urls(collection, "--sort=-bookmarked_at", "--limit", "2") == ["https://gamma.example.net/three", "https://beta.example.org/two"]


def test_list_search_finds_the_archived_text(collection):
    [alpha] = [s for s in collection.list_json() if "alpha" in s["url"]]
    fulltext.index_snapshot(str(collection.root / "search.sqlite3"), alpha["id"], alpha["url"], alpha["title"], "the quick zebrafish swims")
    assert urls(collection, "--search", "zebrafish") == ["https://alpha.example.com/one"]
    assert urls(collection, "--search", "nowhere-to-be-found") == []


def test_list_formats(collection):
    array = json.loads(collection.cli("list", "--json", "--sort", "url").stdout)
    assert [s["url"] for s in array] == sorted(r["url"] for r in RECORDS)
    lines = collection.cli("list", "--jsonl").stdout.splitlines()
    assert len(lines) == 3 and all(json.loads(line)["status"] == "sealed" for line in lines)
    rows = list(csv.reader(io.StringIO(collection.cli("list", "--csv=url,title,tags,timestamp", "--with-headers", "--sort", "url").stdout)))
    assert rows[0] == ["url", "title", "tags", "timestamp"]
    assert rows[1] == ["https://alpha.example.com/one", "Alpha one", "news", "1577836800.000000"]
    assert rows[2][2] == "news,tech"
    page = collection.cli("list", "--html").stdout
    assert page.startswith("<!doctype html>") and "3 snapshot(s)" in page
    for snapshot in collection.list_json():
        assert f'href="archive/{snapshot["id"]}/index.html">{snapshot["title"]}</a>' in page
        assert (collection.root / "archive" / snapshot["id"] / "index.html").exists()


@pytest.mark.parametrize("args, message", [
    (["--before", "yesterday"], "--before expects a Unix timestamp or a date"),
    (["--csv", "url,nope"], "--csv columns must be among"),
    (["--sort", "size"], "sort must be one of"),
    (["-f", "regex", "("], "invalid regex"),
])
def test_list_bad_values_are_one_line(collection, args, message):
    result = collection.cli("list", *args, check=False)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def folders(collection):
    return sorted(p.name for p in (collection.root / "archive").iterdir())


def test_remove_asks_and_deletes_rows_folders_and_search_entries(collection):
    by_url = {s["url"]: s for s in collection.list_json()}
    assert collection.cli("remove", check=False).returncode == 2  # no filter: nothing is removed
    declined = collection.cli("remove", "--tag", "tech", input="n\n", check=False)
    assert declined.returncode == 1 and "Nothing removed" in declined.stdout
    assert len(collection.list_json()) == 3
    confirmed = collection.cli("remove", "--tag", "tech", input="y\n")
    assert "Removed 2 snapshot(s); 2 folder(s) deleted" in confirmed.stdout
    assert [s["url"] for s in collection.list_json()] == ["https://alpha.example.com/one"]
    assert folders(collection) == [by_url["https://alpha.example.com/one"]["id"]]
    assert collection.scalar("SELECT COUNT(*) FROM core_archiveresult") == 1
    missing = collection.cli("remove", "--yes", "https://nowhere.example/", check=False)
    assert missing.returncode == 1 and "No snapshot matches" in missing.stdout


def test_remove_keep_files_leaves_the_folder(collection):
    [alpha] = [s for s in collection.list_json() if "alpha" in s["url"]]
    result = collection.cli("remove", "--yes", "--keep-files", alpha["url"])
    assert "Removed 1 snapshot(s); 1 folder(s) kept" in result.stdout
    assert alpha["id"] in folders(collection) and len(collection.list_json()) == 2


def test_remove_refuses_a_running_snapshot_unless_forced(tmp_path):
    collection = Collection(tmp_path / "data", plugins="sleepy", extra_env={"SLEEPY_SECONDS": "120"}).init()
    collection.cli("add", "--bg", "https://example.com/slow")
    collection.start_consumer("ticks")
    collection.start_consumer("sideeffects")
    try:
        wait_until(lambda: collection.scalar("SELECT pid FROM core_process WHERE kind = 'hook' AND status = 'running'"),
                   timeout=60, message="the slow hook running")
        pid = collection.scalar("SELECT pid FROM core_process WHERE kind = 'hook' AND status = 'running'")
        refused = collection.cli("remove", "--yes", "https://example.com/slow", check=False)
        assert refused.returncode == 1 and "being archived right now" in refused.stderr and "--force" in refused.stderr
        assert collection.counts("snapshot") == {"started": 1}
        forced = collection.cli("remove", "--yes", "--force", "https://example.com/slow", timeout=90)
        assert "Removed 1 snapshot(s)" in forced.stdout, forced.stdout + forced.stderr
        assert collection.scalar("SELECT COUNT(*) FROM core_snapshot") == 0
        wait_until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
                   timeout=30, message="the hook stopped")
        assert folders(collection) == []
    finally:
        collection.stop_all(signal.SIGTERM)


def test_extract_reruns_chosen_plugins_and_runs_new_ones(collection):
    [beta] = [s for s in collection.list_json() if "beta" in s["url"]]
    # By id prefix, a plugin that never ran on it (titler is not in PLUGINS here).
    result = collection.cli("extract", "--plugins", "titler", beta["id"][:24])
    assert "Re-running titler on 1 snapshot(s): 1 hook run(s) queued" in result.stdout and "1 succeeded" in result.stdout
    [after] = [s for s in collection.list_json() if "beta" in s["url"]]
    assert {r["plugin"]: (r["status"], r["attempts"]) for r in after["results"]} == {"noop": ("succeeded", 1), "titler": ("succeeded", 1)}
    assert after["title"] == "Title of https://beta.example.org/two" and after["status"] == "sealed"
    # By filter, again: noop runs a second time on every news snapshot; titler is not touched.
    collection.cli("extract", "--plugins", "noop", "--tag", "news")
    runs = {s["url"]: {r["plugin"]: r["attempts"] for r in s["results"]} for s in collection.list_json()}
    assert runs == {"https://alpha.example.com/one": {"noop": 2}, "https://beta.example.org/two": {"noop": 2, "titler": 1},
                    "https://gamma.example.net/three": {"noop": 1}}
    bad = collection.cli("extract", "--plugins", "nope", beta["id"], check=False)
    assert bad.returncode == 2 and "unknown plugin(s) nope" in bad.stderr


def test_config_get_set_search_reset(tmp_path):
    collection = Collection(tmp_path / "data", plugins="sleepy").init()
    conf = collection.root / "ArchiveBox.conf"
    env = {"TIMEOUT": ""}
    assert collection.cli("config", "--get", "TIMEOUT", "SLEEPY_SECONDS", env=env).stdout == "TIMEOUT=60\nSLEEPY_SECONDS=0.3\n"
    every = collection.cli("config", env=env).stdout.splitlines()
    assert "HOOK_MAX_ATTEMPTS=3" in every and "SLEEPY_SECONDS=0.3" in every and "ONLY_NEW=False" in every
    result = collection.cli("config", "--set", "TIMEOUT=120", "hook_max_attempts=5", "SLEEPY_SECONDS=2.5", env=env)
    assert result.stdout == "TIMEOUT=120\nHOOK_MAX_ATTEMPTS=5\nSLEEPY_SECONDS=2.5\n"
    text = conf.read_text()
    assert text.startswith("# ArchiveBox configuration")  # the file's comments stay
    assert "[GENERAL]\nTIMEOUT = 120" in text and "[ENGINE]\nHOOK_MAX_ATTEMPTS = 5" in text and "SLEEPY_SECONDS = 2.5" in text
    assert collection.cli("config", "--get", "TIMEOUT", env=env).stdout == "TIMEOUT=120\n"
    collection.cli("config", "--set", "TIMEOUT=90", env=env)
    assert conf.read_text().count("\nTIMEOUT = ") == 1 and "\nTIMEOUT = 90\n" in conf.read_text()
    before = conf.read_text()
    for args, message in [(["TIMEUOT=5"], "unknown config key TIMEUOT (did you mean TIMEOUT?)"),
                          (["TIMEOUT=abc"], "TIMEOUT: expected an integer, got 'abc'"),
                          (["TICK_BATCH=0"], "TICK_BATCH: must be >= 1"),
                          (["SLEEPY_SECONDS=1", "ONLY_NEW=perhaps"], "ONLY_NEW"),
                          (["URL_DENYLIST=("], "URL_DENYLIST"),
                          (["novalue"], "--set expects KEY=VALUE")]:
        bad = collection.cli("config", "--set", *args, check=False, env=env)
        assert bad.returncode == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert conf.read_text() == before  # nothing written when one value is invalid
    found = collection.cli("config", "--search", "sleepy", env=env).stdout.splitlines()
    assert found == ["PLUGINS=sleepy", "SLEEPY_ENABLED=True", "SLEEPY_SECONDS=2.5", "SLEEPY_TIMEOUT=90"]
    assert collection.cli("config", "--search", "nothing-like-this", check=False, env=env).returncode == 1
    collection.cli("config", "--reset", "TIMEOUT", env=env)
    assert "\nTIMEOUT = " not in conf.read_text() and collection.cli("config", "--get", "TIMEOUT", env=env).stdout == "TIMEOUT=60\n"
    warned = collection.cli("config", "--set", "SLEEPY_SECONDS=4", env={"SLEEPY_SECONDS": "9"})
    assert "also set in the environment" in warned.stderr
