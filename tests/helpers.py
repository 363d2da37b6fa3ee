"""Helpers for tests that run the real CLI and real ``huey_consumer`` processes."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
FIXTURE_PLUGINS = Path(__file__).resolve().parent / "fixtures" / "plugins"


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.05, message: str = "condition") -> object:
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


LIVE_COLLECTIONS: list["Collection"] = []

_MIGRATED: dict[str, Path] = {}
MIGRATE = """
from archivebox import boot
boot.setup(wire=False)
from django.conf import settings
from django.core.management import call_command
from django.db import connections
for alias in settings.DATABASES:
    call_command("migrate", database=alias, verbosity=0, interactive=False)
connections.close_all()  # the files are copied: nothing may stay in a -wal file (a reading process's are never finalized)
"""


def migrated_databases() -> dict[str, Path]:
    """SQLite databases (the index, the task monitor's) with every migration applied, made
    once per test process by the real ``migrate`` and copied by :meth:`Collection.init`."""
    if not _MIGRATED:
        folder = Path(tempfile.mkdtemp(prefix="archivebox-migrated-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        env = {**os.environ, "DATA_DIR": str(folder)}
        for key in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL"):
            env.pop(key, None)
        subprocess.run([str(VENV_BIN / "python"), "-c", MIGRATE], cwd=folder, env=env, check=True, timeout=300,
                       capture_output=True)
        _MIGRATED.update({name: folder / name for name in ("index.sqlite3", "monitor.sqlite3") if (folder / name).exists()})
    return _MIGRATED


class Collection:
    """A data dir of its own, with the CLI and consumers run as real subprocesses.

    Consumers it starts are killed after the test even if the test fails (see conftest).
    """

    def __init__(self, root: Path, plugins: str = "noop", extra_env: dict | None = None):
        LIVE_COLLECTIONS.append(self)
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "DATA_DIR": str(self.root),
            "PLUGIN_DIRS": str(FIXTURE_PLUGINS),
            "PLUGINS": plugins,
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "INFO",
            **(extra_env or {}),
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.consumers: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def cli(self, *args: str, input: str | None = None, timeout: float = 120, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
        result = subprocess.run([str(VENV_BIN / "archivebox"), *args], cwd=self.root, env={**self.env, **(env or {})},
                                input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"archivebox {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def init(self) -> "Collection":
        """``archivebox init``. On SQLite the databases start as copies of ones migrated once
        per test process (:func:`migrated_databases`): a fresh ``init`` spends 3 of its 4 s
        of CPU rendering the 120 migrations' states, and ~150 tests start with one. ``init``
        itself then runs as on a collection that is up to date; tests of a fresh ``init``
        run ``cli("init")``."""
        if not (self.root / "index.sqlite3").exists() and not self.env.get("DATABASE_URL"):
            for name, template in migrated_databases().items():
                shutil.copyfile(template, self.root / name)
        self.cli("init", "-q")
        return self

    def start_consumer(self, pool: str, workers: int = 4, env: dict | None = None, name: str | None = None) -> subprocess.Popen:
        """``huey_consumer archivebox.pools.<pool> -w N`` (``ticks`` or ``sideeffects``) with its output in a log file."""
        log = self.root / f"{name or pool}-{len(self.logs)}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(VENV_BIN / "huey_consumer"), f"archivebox.pools.{pool}", "-w", str(workers)],
                                    cwd=self.root, env={**self.env, **(env or {})}, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.consumers.append(proc)
        return proc

    def stop_all(self, sig: int = signal.SIGKILL) -> None:
        for proc in self.consumers:
            if proc.poll() is None:
                os.killpg(proc.pid, sig)
        for proc in self.consumers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.consumers = [p for p in self.consumers if p.poll() is None]

    def db(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.root / "index.sqlite3", timeout=30)
        conn.row_factory = sqlite3.Row
        return conn

    def query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        with self.db() as conn:
            return conn.execute(sql, params).fetchall()

    def scalar(self, sql: str, params: tuple = ()):
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    def counts(self, table: str) -> dict[str, int]:
        return {row[0]: row[1] for row in self.query(f"SELECT status, COUNT(*) FROM core_{table} GROUP BY status")}

    def unfinished(self) -> int:
        return sum(self.scalar(f"SELECT COUNT(*) FROM core_{t} WHERE retry_at IS NOT NULL AND NOT (status='running' AND kind IN ('worker', 'forkserver', 'browser'))")
                   if t == "process" else self.scalar(f"SELECT COUNT(*) FROM core_{t} WHERE retry_at IS NOT NULL")
                   for t in ("crawl", "snapshot", "archiveresult", "process"))

    def list_json(self) -> list[dict]:
        return [json.loads(line) for line in self.cli("list", "--jsonl").stdout.splitlines() if line.strip()]

    def log_text(self) -> str:
        return "\n".join(path.read_text(errors="replace") for path in self.logs if path.exists())


def tick_overlaps(audit_file: Path, killed_at: dict[int, float]) -> list[str]:
    """Rows ticked by two ticks at once, from an audit log of tick starts and ends.

    A tick whose process was SIGKILLed has no end line; it is taken to end when its
    process was killed (``killed_at[pid]``).
    """
    events = []
    if not audit_file.exists():
        return []
    for line in audit_file.read_text().splitlines():
        kind, actor, pk, ts, pid = line.split()[:5]
        events.append((float(ts), 0 if kind == "end" else 1, actor, pk, int(pid)))
    open_ticks: dict[tuple[str, str], list[int]] = {}
    for ts, is_start, actor, pk, pid in events:
        open_ticks.setdefault((actor, pk), [])
    problems = []
    timeline = sorted(events)
    # Close the open intervals of killed processes at their kill time.
    starts = {}
    for ts, is_start, actor, pk, pid in timeline:
        key = (actor, pk, pid)
        starts[key] = starts.get(key, 0) + (1 if is_start else -1)
    for (actor, pk, pid), balance in starts.items():
        for _ in range(balance):
            if pid in killed_at:
                timeline.append((killed_at[pid], 0, actor, pk, pid))
            else:
                problems.append(f"{actor} {pk}: tick in live pid {pid} never ended")
    running: dict[tuple[str, str], int] = {}
    for ts, is_start, actor, pk, pid in sorted(timeline):
        key = (actor, pk)
        running[key] = running.get(key, 0) + (1 if is_start else -1)
        if running[key] > 1:
            problems.append(f"{actor} {pk}: two ticks at once at {ts:.6f}")
    return problems


# Hostile feeds, for the engine's feed import and the parse_rss_urls plugin alike.
# Nested entities ("billion laughs"): seven levels expand 50 bytes to 50 MB.
FEED_ENTITY_BOMB = """<?xml version="1.0"?>
<!DOCTYPE rss [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
  <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
  <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
  <!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">
]>
<rss version="2.0"><channel><title>&g;</title>
<item><title>&g;</title><link>http://bomb.example/1</link></item></channel></rss>
"""
# One big entity referenced many times: no nesting, still gigabytes once expanded.
FEED_QUADRATIC_BLOWUP = ('<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY big "' + "x" * 50_000 + '">]>'
                         '<rss version="2.0"><channel><item><title>' + "&big;" * 20_000 + "</title>"
                         "<link>http://q.example/</link></item></channel></rss>")
# A parameter entity that would fetch a DTD from elsewhere.
FEED_EXTERNAL_PARAMETER_ENTITY = ('<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY % p SYSTEM "http://127.0.0.1:1/evil.dtd"> %p;]>'
                                  "<rss version='2.0'><channel><item><link>http://p.example/</link></item></channel></rss>")
