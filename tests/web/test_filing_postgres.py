"""Deduplication on Postgres: two page loads filed at once store a shared payload once.

Under READ COMMITTED the second filing's check of the index cannot see the first's
uncommitted original; filings therefore take turns on an advisory lock (as SQLite's write
lock makes them). The probe holds the first filing's transaction open until the second is
seen waiting for that lock, so without the lock the payload is stored twice every time.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from helpers import VENV_BIN, Collection

from .test_postgres import psql

PROBE = Path(__file__).with_name("filing_probe.py")


def test_two_filings_at_once_on_postgres_store_a_shared_payload_once(tmp_path, postgres_url):
    database = f"abx_{uuid.uuid4().hex[:8]}"
    psql(f"{postgres_url}/postgres", f"CREATE DATABASE {database}")
    collection = Collection(tmp_path / "data", extra_env={"DATABASE_URL": f"{postgres_url}/{database}"}).init()
    done = subprocess.run([str(VENV_BIN / "python"), str(PROBE)], cwd=collection.root, env=collection.env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["second_waited"], found
    assert found["second_revisits"] == 1, found
    assert found["records_of_the_image"] == ["response", "revisit"], found
