"""The scale-out deployment: Postgres app DB, the monitor's tables in it, same recorder, same purge."""

from __future__ import annotations

import subprocess
import uuid

from helpers import VENV_BIN

from .webtools import PASSWORD, Client, Server, web_collection


def psql(url: str, sql: str) -> str:
    code = ("import sys, psycopg\n"
            "with psycopg.connect(sys.argv[1], autocommit=True) as c:\n"
            "    rows = c.execute(sys.argv[2]).fetchall() if sys.argv[2].lstrip().upper().startswith('SELECT') else c.execute(sys.argv[2])\n"
            "    print(rows if isinstance(rows, list) else '')\n")
    return subprocess.run([str(VENV_BIN / "python"), "-c", code, url, sql], capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def test_monitor_and_server_on_postgres(tmp_path, postgres_url):
    database = f"abx_{uuid.uuid4().hex[:8]}"
    psql(f"{postgres_url}/postgres", f"CREATE DATABASE {database}")
    url = f"{postgres_url}/{database}"
    collection = web_collection(tmp_path / "data", plugins="noop,pagesaver", extra_env={"DATABASE_URL": url})
    assert not (collection.root / "monitor.sqlite3").exists() and not (collection.root / "index.sqlite3").exists()
    server = Server(collection)
    try:
        server.wait_healthy()
        collection.cli("add", "https://example.com/pg")
        [snapshot] = collection.list_json()
        assert snapshot["status"] == "sealed"
        client = Client(server.url)
        client.login("admin", PASSWORD)
        assert "ticks/tick" in client.get("/admin/huey_monitor/taskmodel/").text
        assert "https://example.com/pg" in client.get(f"/snapshot/{snapshot['id']}/").text
        # The search box through the trigram indexes (taken by id when few), and a miss.
        assert snapshot["id"] in client.get("/?q=example.com/pg&query_type=url").text
        assert snapshot["id"] not in client.get("/?q=example.org&query_type=url").text
        counts = psql(url, "SELECT COUNT(*), SUM(CASE WHEN finished THEN 1 ELSE 0 END) FROM huey_monitor_taskmodel")
        total, finished = eval(counts)[0]  # noqa: S307 (our own repr of ints)
        assert total > 0 and finished == total
        duplicates = psql(url, "SELECT task_id, signal_name, COUNT(*) FROM huey_monitor_signalinfomodel "
                               "GROUP BY task_id, signal_name HAVING COUNT(*) > 1")
        assert duplicates == "[]"
    finally:
        server.stop()
    out = collection.cli("purge", "--older-than", "0s").stdout
    assert "0 task(s)" not in out and "exited Process row(s)" in out
    assert psql(url, "SELECT COUNT(*) FROM huey_monitor_taskmodel") == "[(0,)]"
