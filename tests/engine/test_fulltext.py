"""The engine's full-text index (archivebox.fulltext): SQLite FTS5, written by the search
plugin's hook, read by `archivebox search`, the API and snapshot filters."""

import os
import sqlite3
import subprocess
import sys
import threading

import pytest

from archivebox import fulltext as fts


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
        "import sys\n"
        "from archivebox import fulltext\n"
        "for i in range(15):\n"
        "    fulltext.index_snapshot(sys.argv[1], f'{sys.argv[2]}-{i}', 'http://x/', 'T', f'word{sys.argv[2]} common ' * 200)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, db, f"w{n}"], stderr=subprocess.PIPE)
             for n in range(6)]
    for proc in procs:
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
    assert len(fts.search(db, "common", limit=1000)) == 90
    assert len(fts.search(db, "wordw3")) == 15


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


def test_the_indexed_text_of_a_snapshot_is_read_without_writing(tmp_path):
    db = str(fulltext_db := tmp_path / "search.sqlite3")
    assert fts.indexed_text(db, "s1") is None  # no database: nothing read, nothing created
    assert not fulltext_db.exists()
    fts.index_snapshot(db, "s1", "http://a.example/", "T", "the stored words")
    assert fts.indexed_text(db, "s1") == "the stored words" and fts.indexed_text(db, "s2") is None
    assert fts.database(tmp_path) == fulltext_db
