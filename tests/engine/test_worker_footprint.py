"""A worker's footprint: what it imports and how its queue storage behaves."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from huey.constants import EmptyData

from archivebox.broker.huey_ext import DoorbellSqliteStorage

PROBE = """
import json, sys
from archivebox.boot import setup
setup()
import archivebox.tasks.queue, archivebox.sideeffects.queue, huey.storage
hidden = "psycopg" in sys.modules
import psycopg  # still importable by whoever needs it
print(json.dumps({"loaded_with_huey": hidden, "huey_sees_driver": huey.storage.psycopg is not None}))
"""


def probe(tmp_path, **env) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, "DATA_DIR": str(tmp_path), **env},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_worker_on_sqlite_does_not_load_the_postgres_driver(tmp_path):
    assert probe(tmp_path, DATABASE_URL="") == {"loaded_with_huey": False, "huey_sees_driver": False}


def test_on_postgres_the_driver_is_loaded_as_usual(tmp_path):
    # settings only: nothing connects
    assert probe(tmp_path, DATABASE_URL="postgres://u:p@127.0.0.1:1/db") == {"loaded_with_huey": True, "huey_sees_driver": True}


def test_popping_a_missing_key_reads_without_writing(tmp_path):
    """Huey pops every executed task's revoke key: with nothing to pop, that takes no write lock."""
    path = tmp_path / "queue.sqlite3"
    storage = DoorbellSqliteStorage(name="footprint", filename=str(path), timeout=0.2)
    storage.put_data("other", b"x")  # creates the file and its tables
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        assert storage.pop_data("absent") is EmptyData  # would wait, then fail with "database is locked"
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    storage.put_data("revoked", b"yes")
    assert storage.pop_data("revoked") == b"yes"
    assert storage.pop_data("revoked") is EmptyData
