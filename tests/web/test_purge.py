"""`archivebox purge --older-than DURATION`: old monitor rows, old exited processes and their logs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from archivebox.web.purge import parse_duration

from .webtools import web_collection


def test_durations():
    assert parse_duration("7d").total_seconds() == 7 * 86400
    assert parse_duration("12h").total_seconds() == 12 * 3600
    assert parse_duration("30m").total_seconds() == 1800
    assert parse_duration("1d12h").total_seconds() == 36 * 3600
    for bad in ("", "7", "d", "7x", "-1d", "1.5h", "7d junk"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def age_everything(root: Path, days: int) -> None:
    shift = f"-{days} days"
    with sqlite3.connect(root / "index.sqlite3") as conn:
        conn.execute("UPDATE core_process SET ended_at = datetime(ended_at, ?), modified_at = datetime(modified_at, ?) "
                     "WHERE status = 'exited'", (shift, shift))
    with sqlite3.connect(root / "monitor.sqlite3") as conn:
        conn.execute("UPDATE huey_monitor_taskmodel SET update_dt = datetime(update_dt, ?), create_dt = datetime(create_dt, ?)",
                     (shift, shift))


def test_purge_deletes_old_rows_and_logs_and_nothing_else(tmp_path):
    collection = web_collection(tmp_path / "data", plugins="noop,pagesaver")
    collection.cli("add", "https://example.com/old")
    outside = tmp_path / "not-a-log.txt"
    outside.write_text("keep me")
    collection.query("UPDATE core_process SET stderr_path = ? WHERE id = (SELECT id FROM core_process WHERE kind = 'hook' LIMIT 1)",
                     (str(outside),))
    hook_logs = [Path(p) for row in collection.query("SELECT stdout_path, stderr_path FROM core_process WHERE kind = 'hook'") for p in row]
    assert len(hook_logs) == 4 and all(p.is_file() for p in hook_logs)
    logs = [Path(p) for row in collection.query("SELECT stdout_path, stderr_path FROM core_process") for p in row if p]
    processes = collection.scalar("SELECT COUNT(*) FROM core_process")
    with sqlite3.connect(collection.root / "monitor.sqlite3") as conn:
        tasks = conn.execute("SELECT COUNT(*) FROM huey_monitor_taskmodel").fetchone()[0]
        signals = conn.execute("SELECT COUNT(*) FROM huey_monitor_signalinfomodel").fetchone()[0]
    assert processes and tasks and signals

    fresh = collection.cli("purge", "--older-than", "1d").stdout
    assert "0 task(s), 0 signal(s)" in fresh and "0 exited Process row(s)" in fresh

    age_everything(collection.root, 3)
    dry = collection.cli("purge", "--older-than", "2d", "--dry-run").stdout
    assert dry.startswith("Would delete") and f"{processes} exited Process row(s)" in dry
    assert collection.scalar("SELECT COUNT(*) FROM core_process") == processes

    out = collection.cli("purge", "--older-than", "2d").stdout
    assert f"{tasks} task(s), {signals} signal(s)" in out
    assert f"{processes} exited Process row(s)" in out
    assert f"{len(logs) - 1} file(s)" in out and "kept 1 log path(s)" in out, out
    assert collection.scalar("SELECT COUNT(*) FROM core_process") == 0
    assert not any(p.exists() for p in logs if p != outside)
    assert outside.read_text() == "keep me"
    with sqlite3.connect(collection.root / "monitor.sqlite3") as conn:
        assert conn.execute("SELECT COUNT(*) FROM huey_monitor_taskmodel").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM huey_monitor_signalinfomodel").fetchone()[0] == 0
    # Archived data is never touched.
    assert collection.scalar("SELECT COUNT(*) FROM core_snapshot") == 1
    assert collection.scalar("SELECT COUNT(*) FROM core_archiveresult WHERE status = 'succeeded'") == 2
    snapshot = collection.list_json()[0]
    assert (collection.root / snapshot["output_dir"] / "pagesaver" / "page.html").is_file()


def test_purge_keeps_processes_of_unfinished_results(tmp_path):
    collection = web_collection(tmp_path / "data", plugins="noop")
    collection.cli("add", "https://example.com/x")
    collection.query("UPDATE core_archiveresult SET status = 'queued', retry_at = datetime('now', '+1 hour')")
    age_everything(collection.root, 3)
    out = collection.cli("purge", "--older-than", "1d").stdout
    hooks = collection.scalar("SELECT COUNT(*) FROM core_process WHERE kind = 'hook'")
    assert hooks == 1, out
