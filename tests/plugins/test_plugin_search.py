"""search plugin: SQLite FTS5 index (fts.py) and its step-9 hook."""
import importlib.util
import os
import sqlite3
import subprocess
import sys
import threading

import pytest

from plugintools import PLUGINS_DIR


def _load_fts():
    spec = importlib.util.spec_from_file_location("archivebox_search_fts", os.path.join(PLUGINS_DIR, "search", "fts.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fts = _load_fts()


def test_index_and_search(tmp_path):
    db = str(tmp_path / "search.sqlite3")
    fts.index_snapshot(db, "s1", "http://a.example/", "Amber Harbor", "The quokka jumped over the harbor wall.")
    fts.index_snapshot(db, "s2", "http://b.example/", "Cobalt Meadow", "Meadows of cobalt flowers; a quokka too.")
    fts.index_snapshot(db, "s3", "http://c.example/", "Caf\u00e9 Notes", "Cr\u00e8me br\u00fbl\u00e9e recipes")
    hits = fts.search(db, "quokka")
    assert {h["snapshot_id"] for h in hits} == {"s1", "s2"}
    assert set(hits[0]) == {"snapshot_id", "url", "title", "snippet", "rank"}
    assert "[quokka]" in hits[0]["snippet"]
    # title matches rank above text-only matches
    assert fts.search(db, "cobalt")[0]["snapshot_id"] == "s2"
    assert [h["snapshot_id"] for h in fts.search(db, "harbor")] == ["s1"]
    assert [h["snapshot_id"] for h in fts.search(db, "cafe creme")] == ["s3"]  # diacritics folded
    assert [h["snapshot_id"] for h in fts.search(db, "quok*", limit=1)] != []
    assert len(fts.search(db, "quokka", limit=1)) == 1
    assert fts.search(db, "nothingmatches") == []
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reindex_replaces_row(tmp_path):
    db = str(tmp_path / "search.sqlite3")
    fts.index_snapshot(db, "s1", "http://a.example/", "Old", "oldword text")
    fts.index_snapshot(db, "s1", "http://a.example/", "New", "newword text")
    assert fts.search(db, "oldword") == []
    hits = fts.search(db, "newword")
    assert [(h["snapshot_id"], h["title"]) for h in hits] == [("s1", "New")]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM search_docs").fetchone()[0] == 1
    assert fts.remove_snapshot(db, "s1") is True
    assert fts.search(db, "newword") == []
    assert fts.remove_snapshot(db, "s1") is False


@pytest.mark.parametrize("query", ['"unterminated', "AND", "foo AND", "nosuchcolumn:foo", "(a OR", "a NEAR(", "example.com", "*"])
def test_invalid_query_raises_value_error(tmp_path, query):
    db = str(tmp_path / "search.sqlite3")
    fts.index_snapshot(db, "s1", "http://a.example/", "T", "text")
    with pytest.raises(ValueError) as info:
        fts.search(db, query)
    message = str(info.value)
    assert "\n" not in message and message.startswith("invalid search query")


def test_literal_query_and_edge_cases(tmp_path):
    db = str(tmp_path / "search.sqlite3")
    assert fts.search(db, "anything") == []  # no database yet
    assert not os.path.exists(db)
    with pytest.raises(ValueError):
        fts.search(db, "   ")
    fts.index_snapshot(db, "s1", "http://example.com/page", "T", 'about example.com and "quotes"')
    assert [h["snapshot_id"] for h in fts.search(db, fts.literal_query('example.com "quotes'))] == ["s1"]


def test_concurrent_writers(tmp_path):
    db = str(tmp_path / "search.sqlite3")
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('f', sys.argv[1]); m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        "for i in range(15):\n"
        "    m.index_snapshot(sys.argv[2], f'{sys.argv[3]}-{i}', 'http://x/', 'T', f'word{sys.argv[3]} common ' * 200)\n"
    )
    path = os.path.join(PLUGINS_DIR, "search", "fts.py")
    procs = [subprocess.Popen([sys.executable, "-c", code, path, db, f"w{n}"], stderr=subprocess.PIPE)
             for n in range(6)]
    for proc in procs:
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
    assert len(fts.search(db, "common", limit=1000)) == 90
    assert len(fts.search(db, "wordw3")) == 15


def test_search_hook_indexes_htmltotext(site, snapshot_factory):
    page = site.info.pages[11]
    snap = snapshot_factory(page.url)
    for plugin in ("wget", "title", "htmltotext"):
        assert snap.run(plugin).status == "succeeded"
    run = snap.run("search")
    assert run.returncode == 0 and run.status == "succeeded", run
    assert run.result["output_json"]["source"] == "htmltotext/htmltotext.txt"
    db = os.path.join(snap.data_dir, "search.sqlite3")
    hits = fts.search(db, page.word)
    assert [(h["snapshot_id"], h["url"], h["title"]) for h in hits] == [(snap.id, page.url, page.title)]
    # re-running replaces the row
    assert snap.run("search").status == "succeeded"
    assert len(fts.search(db, page.word)) == 1


def test_search_hook_fallbacks(snapshot_factory):
    snap = snapshot_factory("http://127.0.0.1:9/a")
    run = snap.run("search")
    assert run.returncode == 0 and run.status == "skipped", run
    os.makedirs(os.path.join(snap.dir, "title"))
    with open(os.path.join(snap.dir, "title", "title.txt"), "w") as f:
        f.write("Zanzibar Lighthouse\n")
    run = snap.run("search")
    assert run.status == "succeeded" and run.result["output_json"]["source"] == "title", run
    os.makedirs(os.path.join(snap.dir, "readability"))
    with open(os.path.join(snap.dir, "readability", "article.txt"), "w") as f:
        f.write("readable body with glimmerword\n")
    run = snap.run("search")
    assert run.result["output_json"]["source"] == "readability/article.txt"
    db = os.path.join(snap.data_dir, "search.sqlite3")
    assert [h["title"] for h in fts.search(db, "glimmerword")] == ["Zanzibar Lighthouse"]


def test_search_hook_without_data_dir_guesses_root(snapshot_factory):
    snap = snapshot_factory("http://127.0.0.1:9/b")
    os.makedirs(os.path.join(snap.dir, "htmltotext"))
    with open(os.path.join(snap.dir, "htmltotext", "htmltotext.txt"), "w") as f:
        f.write("plain words\n")
    run = snap.run("search", env={"DATA_DIR": None})
    assert run.status == "succeeded", run
    assert os.path.exists(os.path.join(snap.data_dir, "search.sqlite3"))


def test_a_writer_waits_for_the_file_to_be_free_to_switch_it_to_wal(tmp_path):
    """Switching a new file to WAL mode fails at once while another connection is about to
    write to it in the old mode (the busy timeout does not apply): the writer waits and
    succeeds (six hooks indexing into a new file at once failed now and then)."""
    db = str(tmp_path / "search.sqlite3")
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE early (x)")
    other.execute("BEGIN IMMEDIATE")  # a write lock in rollback-journal mode
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    try:
        fts.index_snapshot(db, "s1", "http://a.example/", "T", "waited for the lock")
    finally:
        release.join()
        other.close()
    assert [h["snapshot_id"] for h in fts.search(db, "waited")] == ["s1"]
