"""A corrupted queue file (overwritten with random bytes) is named in one line, moved aside
and rebuilt; nothing hangs and no crawl is lost (the queue holds only hints)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

from tests.helpers import VENV_BIN, Collection, wait_until


def corrupt(path) -> None:
    path.write_bytes(os.urandom(64 * 1024))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def test_a_foreground_add_over_a_corrupted_queue_file_says_so_once_and_finishes(tmp_path):
    coll = Collection(tmp_path / "data", plugins="noop").init()
    coll.cli("add", "--bg", "https://example.com/queued-before")
    queue = coll.root / "queues" / "ticks.sqlite3"
    assert queue.exists()
    corrupt(queue)
    status = json.loads(coll.cli("status", "--json").stdout)
    assert status["queue_files"]["corrupted"] == [f"{queue}: file is not a database"]
    assert "Warning: queue file" in coll.cli("status").stdout

    result = coll.cli("add", "https://example.com/added-after", timeout=120)
    lines = [line for line in result.stderr.splitlines() if "corrupted" in line]
    assert len(lines) == 1 and str(queue) in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert coll.scalar("SELECT status FROM core_crawl WHERE urls LIKE '%added-after%'") == "sealed"
    assert coll.scalar("SELECT COUNT(*) FROM core_crawl") == 2  # the one queued before the damage is still there
    [aside] = list(queue.parent.glob("ticks.sqlite3.corrupt-*"))
    status = json.loads(coll.cli("status", "--json").stdout)
    assert status["queue_files"] == {"corrupted": [], "moved_aside": [str(aside)]}
    assert "moved aside" in coll.cli("status").stdout


def test_a_queue_file_corrupted_under_running_workers_is_rebuilt_and_work_goes_on(tmp_path):
    coll = Collection(tmp_path / "data", plugins="noop").init()
    worker = subprocess.Popen([str(VENV_BIN / "archivebox"), "worker"], cwd=coll.root, env=coll.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        coll.cli("add", "--bg", "https://example.com/first")
        wait_until(lambda: coll.counts("crawl") == {"sealed": 1}, timeout=60, message="the first crawl")
        for name in ("ticks", "sideeffects"):
            corrupt(coll.root / "queues" / f"{name}.sqlite3")
        second = coll.cli("add", "--bg", "https://example.com/second")
        wait_until(lambda: coll.counts("crawl") == {"sealed": 2}, timeout=60, message="the second crawl, after the damage")
    finally:
        os.killpg(worker.pid, signal.SIGINT)
        _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0
    assert "Traceback" not in err + second.stderr, err + second.stderr
    # The `add` that met the damage, or a consumer (one that still has the old file open may
    # read on from its write-ahead log and meet the damage later, or not before it stops):
    # each file met is named once and moved aside; what nobody met, the next command does.
    named = [line for line in (second.stderr + err).splitlines() if "is corrupted" in line]
    moved = sorted((coll.root / "queues").glob("*.sqlite3.corrupt-*"))
    assert len(named) == len(moved) <= 2, (named, moved)
    for aside in moved:
        assert sum(aside.name.split(".corrupt-")[0] in line for line in named) == 1, (aside, named)
    result = coll.cli("add", "https://example.com/third", timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    assert coll.counts("crawl") == {"sealed": 3}
    status = json.loads(coll.cli("status", "--json").stdout)
    assert status["queue_files"]["corrupted"] == [], status["queue_files"]
