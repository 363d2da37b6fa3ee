"""`archivebox add`: bookmark imports keep their metadata, and the options that shape a crawl.

Every test runs the CLI as a subprocess on a data dir of its own, with files written here.
"""

import json
from pathlib import Path

import pytest
from helpers import Collection

NETSCAPE = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3 ADD_DATE="1500000000">Folder</H3>
    <DL><p>
        <DT><A HREF="https://example.com/one" ADD_DATE="1500000000" TAGS="news,tech">First &amp; One</A>
        <DD>a description
        <DT><A HREF="https://example.com/two" ADD_DATE="1600000000123">Second</A>
    </DL><p>
</DL><p>
"""

PINBOARD = [
    {"href": "https://example.com/pin1", "description": "Pinned one", "extended": "", "time": "2019-03-04T05:06:07Z",
     "shared": "yes", "toread": "no", "tags": "alpha beta"},
    {"href": "https://example.com/pin2", "description": "Pinned two", "time": "2018-01-01T00:00:00Z", "tags": ""},
]

POCKET_API = {"status": 1, "list": {
    "111": {"item_id": "111", "given_url": "https://example.com/pocket1", "resolved_url": "https://example.com/pocket1",
            "given_title": "", "resolved_title": "Pocket one", "time_added": "1577836800", "tags": {"readlater": {"tag": "readlater"}}},
}}

POCKET_CSV = "title,url,time_added,tags,status\nPocket CSV,https://example.com/pocket2,1580515200,a|b,unread\n"

JSONL = "\n".join(json.dumps(r) for r in [
    {"url": "https://example.com/j1", "title": "Line one", "tags": ["x", "y"], "timestamp": 1262304000},
    {"url": "https://example.com/j2", "title": "Line two", "tags": "z", "timestamp": "2011-01-01T00:00:00+00:00"},
]) + "\n"

RSS = """<?xml version="1.0"?>
<rss version="2.0"><channel><title>Feed</title><link>https://example.com/</link>
<item><title>Post one</title><link>https://example.com/post1</link><pubDate>Tue, 02 Jan 2024 10:00:00 GMT</pubDate>
<category>blog</category></item>
<item><title>Post two</title><link>https://example.com/post2</link><pubDate>Wed, 03 Jan 2024 10:00:00 +0000</pubDate></item>
</channel></rss>
"""

ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom</title><link href="https://example.com/"/>
<entry><title>Entry one</title><link rel="alternate" href="https://example.com/atom1"/><updated>2023-06-07T08:09:10Z</updated>
<category term="atomic"/></entry>
</feed>
"""


@pytest.fixture
def collection(tmp_path):
    return Collection(tmp_path / "data", plugins="noop").init()


def imported(collection, tmp_path, name, content, *extra):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    collection.cli("add", "-f", str(path), *extra)
    return {s["url"]: s for s in collection.list_json()}


def meta(snapshot):
    return snapshot["title"], snapshot["tags"], snapshot["bookmarked_at"]


def test_netscape_bookmarks_keep_titles_tags_and_add_dates(collection, tmp_path):
    found = imported(collection, tmp_path, "bookmarks.html", NETSCAPE, "--tag", "imported")
    assert meta(found["https://example.com/one"]) == ("First & One", ["imported", "news", "tech"], "2017-07-14T02:40:00+00:00")
    # ADD_DATE in milliseconds (as some browsers write it) is read as the same instant.
    assert meta(found["https://example.com/two"]) == ("Second", ["imported"], "2020-09-13T12:26:40.123000+00:00")


def test_pinboard_json_export(collection, tmp_path):
    found = imported(collection, tmp_path, "pinboard.json", PINBOARD)
    assert meta(found["https://example.com/pin1"]) == ("Pinned one", ["alpha", "beta"], "2019-03-04T05:06:07+00:00")
    assert meta(found["https://example.com/pin2"]) == ("Pinned two", [], "2018-01-01T00:00:00+00:00")


def test_pocket_json_and_csv_exports(collection, tmp_path):
    found = imported(collection, tmp_path, "pocket.json", POCKET_API)
    assert meta(found["https://example.com/pocket1"]) == ("Pocket one", ["readlater"], "2020-01-01T00:00:00+00:00")
    found = imported(collection, tmp_path, "pocket.csv", POCKET_CSV)
    assert meta(found["https://example.com/pocket2"]) == ("Pocket CSV", ["a", "b"], "2020-02-01T00:00:00+00:00")


def test_jsonl_records(collection, tmp_path):
    found = imported(collection, tmp_path, "links.jsonl", JSONL)
    assert meta(found["https://example.com/j1"]) == ("Line one", ["x", "y"], "2010-01-01T00:00:00+00:00")
    assert meta(found["https://example.com/j2"]) == ("Line two", ["z"], "2011-01-01T00:00:00+00:00")


def test_rss_and_atom_items_keep_titles_and_dates(collection, tmp_path):
    found = imported(collection, tmp_path, "feed.rss", RSS)
    assert set(found) == {"https://example.com/post1", "https://example.com/post2"}  # not the channel's own link
    assert meta(found["https://example.com/post1"]) == ("Post one", ["blog"], "2024-01-02T10:00:00+00:00")
    assert meta(found["https://example.com/post2"]) == ("Post two", [], "2024-01-03T10:00:00+00:00")
    found = imported(collection, tmp_path, "feed.atom", ATOM)
    assert meta(found["https://example.com/atom1"]) == ("Entry one", ["atomic"], "2023-06-07T08:09:10+00:00")


def test_stdin_import_and_a_forced_parser(collection, tmp_path):
    collection.cli("add", input=JSONL)
    assert {s["url"]: s["title"] for s in collection.list_json()} == {"https://example.com/j1": "Line one",
                                                                      "https://example.com/j2": "Line two"}
    # --parser txt reads the same file as prose: URLs only, no metadata.
    page = tmp_path / "page.html"
    page.write_text('<html><body><a href="https://example.com/h1">H1</a> see https://example.com/prose</body></html>')
    collection.cli("add", "--bg", "--parser", "html", "-f", str(page))
    assert collection.scalar("SELECT urls FROM core_crawl ORDER BY created_at DESC LIMIT 1") == "https://example.com/h1"
    bad = collection.cli("add", "--bg", "--parser", "rss", "-f", str(page), check=False)
    assert bad.returncode == 2 and "not a valid feed" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_an_imported_title_is_kept_until_a_hook_finds_a_better_one(tmp_path):
    collection = Collection(tmp_path / "data", plugins="noop").init()
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"url": "https://example.com/kept", "title": "From the import"}) + "\n")
    collection.cli("add", "-f", str(path))
    assert collection.list_json()[0]["title"] == "From the import"
    # A hook that reports a title replaces it (titler reports "Title of <url>").
    path.write_text(json.dumps({"url": "https://example.com/replaced", "title": "From the import"}) + "\n")
    collection.cli("add", "-f", str(path), env={"PLUGINS": "titler"})
    titles = {s["url"]: s["title"] for s in collection.list_json()}
    assert titles == {"https://example.com/kept": "From the import", "https://example.com/replaced": "Title of https://example.com/replaced"}


def results_by_plugin(collection):
    return {row["plugin"]: row["status"] for row in collection.query("SELECT plugin, status FROM core_archiveresult")}


def test_plugins_option_runs_only_those_plugins(tmp_path):
    collection = Collection(tmp_path / "data", plugins="").init()
    collection.cli("add", "--plugins", "titler,noop", "https://example.com/p", env={"PLUGINS": ""})
    assert results_by_plugin(collection) == {"titler": "succeeded", "noop": "succeeded"}
    assert json.loads(collection.scalar("SELECT config FROM core_crawl"))["PLUGINS"] == "titler,noop"
    bad = collection.cli("add", "--plugins", "titler,nope", "https://example.com/q", check=False)
    assert bad.returncode == 2 and "unknown plugin(s) nope" in bad.stderr


def test_max_urls_caps_the_crawl_including_links_found(tmp_path):
    collection = Collection(tmp_path / "data", plugins="outlinks").init()
    collection.cli("add", "--depth", "1", "--max-urls", "3", "https://example.com/a", "https://example.com/b")
    # 2 seeds + 6 discovered children, capped at 3 snapshots in all.
    assert collection.scalar("SELECT COUNT(*) FROM core_snapshot") == 3
    assert collection.counts("crawl") == {"sealed": 1}


def test_only_new_skips_urls_already_archived(collection):
    collection.cli("add", "https://example.com/old")
    result = collection.cli("add", "--bg", "--only-new", "https://example.com/old", "https://example.com/new")
    assert "Skipped 1 URL(s) already archived" in result.stdout
    assert collection.scalar("SELECT urls FROM core_crawl ORDER BY created_at DESC LIMIT 1") == "https://example.com/new"
    again = collection.cli("add", "--bg", "--only-new", "https://example.com/old")
    assert again.returncode == 0 and "Nothing to add" in again.stdout
    assert collection.scalar("SELECT COUNT(*) FROM core_crawl") == 2
    # Without --only-new the same URL is archived again (a new snapshot: the page over time).
    collection.cli("add", "--bg", "https://example.com/old")
    assert collection.scalar("SELECT COUNT(*) FROM core_crawl") == 3


def test_index_only_adds_snapshots_that_update_archives_later(tmp_path):
    collection = Collection(tmp_path / "data", plugins="titler,noop").init()
    added = collection.cli("add", "--index-only", "--tag", "later", "https://example.com/i1", "https://example.com/i2")
    assert added.returncode == 0
    snapshots = collection.list_json()
    assert sorted(s["url"] for s in snapshots) == ["https://example.com/i1", "https://example.com/i2"]
    assert all(s["status"] == "sealed" and s["results"] == [] and s["tags"] == ["later"] for s in snapshots)
    collection.cli("add", "https://example.com/full")  # an ordinary crawl: update leaves it alone
    updated = collection.cli("update")
    assert "Archiving 2 snapshot(s) added with --index-only (4 result(s) queued)" in updated.stdout
    by_url = {s["url"]: s for s in collection.list_json()}
    for url in ("https://example.com/i1", "https://example.com/i2", "https://example.com/full"):
        assert by_url[url]["status"] == "sealed"
        assert sorted((r["plugin"], r["status"]) for r in by_url[url]["results"]) == [("noop", "succeeded"), ("titler", "succeeded")]
    assert by_url["https://example.com/i1"]["title"] == "Title of https://example.com/i1"
    # Archived once: a second update finds nothing left to do.
    assert "index-only" not in collection.cli("update").stdout


def test_crawl_timeout_cancels_what_is_unfinished(tmp_path):
    collection = Collection(tmp_path / "data", plugins="sleepy").init()
    result = collection.cli("add", "--crawl-timeout", "2s", "-c", "SLEEPY_SECONDS=60", "https://example.com/slow",
                            check=False, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    crawl = collection.query("SELECT status, last_error FROM core_crawl")[0]
    assert crawl["status"] == "failed" and "CRAWL_TIMEOUT" in crawl["last_error"]
    assert collection.counts("snapshot") == {"failed": 1}
    assert collection.unfinished() == 0


def test_snapshot_max_size_skips_hooks_once_the_folder_is_too_big(tmp_path):
    collection = Collection(tmp_path / "data", plugins="filler,titler").init()
    collection.cli("add", "--snapshot-max-size", "100kb", "-c", "FILLER_BYTES=200000", "https://example.com/big")
    assert results_by_plugin(collection) == {"filler": "succeeded", "titler": "skipped"}
    reason = collection.scalar("SELECT output_str FROM core_archiveresult WHERE plugin = 'titler'")
    assert "SNAPSHOT_MAX_SIZE" in reason
    collection.cli("add", "--snapshot-max-size", "1mb", "-c", "FILLER_BYTES=200000", "https://example.com/small")
    assert collection.scalar("SELECT COUNT(*) FROM core_archiveresult WHERE status = 'succeeded'") == 3


@pytest.mark.parametrize("args, message", [
    (["--max-urls", "-1"], "--max-urls must be at least 0"),
    (["--crawl-timeout", "soon"], "--crawl-timeout expects seconds"),
    (["--snapshot-max-size", "big"], "--snapshot-max-size expects a size"),
])
def test_bad_option_values_get_one_line(collection, args, message):
    result = collection.cli("add", *args, "https://example.com/x", check=False)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
