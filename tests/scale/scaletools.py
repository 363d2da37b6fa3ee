"""Helpers of the scale-out tests: a collection on Postgres + Redis, "machines", audits.

A *machine* here is a ticks consumer and a side-effects consumer sharing one
``MACHINE_ID``, the way two containers (or two systemd units) on one host would. Every
machine works on the same data dir (in production: a shared volume) and the same
Postgres and Redis.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from helpers import Collection

SCALE_DIR = Path(__file__).resolve().parent
FIXTURES = SCALE_DIR.parent / "fixtures"
SCALE_PLUGINS = SCALE_DIR / "plugins"

# Short leases and deadlines, so that recovery from a kill takes seconds, not minutes.
FAST_RECOVERY = {
    "MAX_TICK_TIME": "2", "ORCHESTRATOR_LEASE_TTL": "2", "HEARTBEAT_INTERVAL": "0.5", "HEARTBEAT_TTL": "3",
    "SWEEP_INTERVAL": "1", "HOOK_MAX_ATTEMPTS": "20", "HOOK_RETRY_BACKOFF": "0.2", "TICK_BACKOFF_BASE": "0.1",
    "TICK_BACKOFF_MAX": "2", "SNAPSHOT_MAX_ACTIVE": "12", "HOOK_KILL_GRACE": "0.5", "SIDEEFFECT_LOST_AFTER": "1",
    "TIMEOUT": "4",
}


def audit_env(audit: Path, orchestrator_audit: Path) -> dict[str, str]:
    """Load the tick audit plugin (tests/fixtures/audit_plugin.py) and the orchestrator audit."""
    return {
        "LIFECYCLE_PLUGINS": "audit_plugin,orchestrator_audit",
        "AUDIT_FILE": str(audit),
        "ORCH_AUDIT_FILE": str(orchestrator_audit),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(FIXTURES), str(SCALE_DIR), os.environ.get("PYTHONPATH", "")])),
    }


class ScaleCollection(Collection):
    """A :class:`helpers.Collection` whose index is a Postgres database and whose queues are in Redis."""

    def __init__(self, root: Path, database_url: str, redis_url: str, plugins: str = "noop", extra_env: dict | None = None):
        env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url,
               "PLUGIN_DIRS": os.pathsep.join([str(SCALE_DIR.parent / "fixtures" / "plugins"), str(SCALE_PLUGINS)]),
               **(extra_env or {})}
        super().__init__(root, plugins=plugins, extra_env=env)
        self.database_url = database_url
        self.machines: list[Machine] = []

    # The index is in Postgres: same query helpers as the SQLite collection, through psycopg.

    def query(self, sql: str, params: tuple = ()) -> list[dict]:
        import psycopg  # noqa: PLC0415
        from psycopg.rows import dict_row  # noqa: PLC0415

        with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5, row_factory=dict_row) as conn:
            cursor = conn.execute(sql.replace("?", "%s"), params)
            return cursor.fetchall() if cursor.description else []

    def scalar(self, sql: str, params: tuple = ()):
        rows = self.query(sql, params)
        return next(iter(rows[0].values())) if rows else None

    def counts(self, table: str) -> dict[str, int]:
        return {row["status"]: row["n"] for row in self.query(f"SELECT status, COUNT(*) AS n FROM core_{table} GROUP BY status")}

    def unfinished(self) -> int:
        """Rows not final yet (the Process rows of live workers and their fork servers do not count)."""
        try:
            return sum(self.scalar(f"SELECT COUNT(*) FROM core_{t} WHERE retry_at IS NOT NULL"
                                   + (" AND NOT (status = 'running' AND kind IN ('worker', 'forkserver'))" if t == "process" else ""))
                       for t in ("crawl", "snapshot", "archiveresult", "process"))
        except Exception:  # noqa: BLE001 - the database may be restarting: "not finished yet"
            return -1

    def django(self, code: str, env: dict | None = None) -> object:
        """Run ``code`` with Django set up on this collection, in a fresh interpreter; returns
        what it assigns to ``result`` (JSON)."""
        script = "from archivebox import boot\nboot.setup()\nimport json\nresult = None\n" + textwrap.dedent(code) + \
                 "\nprint(json.dumps(result, default=str))\n"
        done = subprocess.run([sys.executable, "-c", script], cwd=self.root, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"django snippet failed:\n{done.stderr}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def start_machine(self, name: str, ticks: int = 2, sideeffects: int = 4, env: dict | None = None) -> "Machine":
        machine_env = {"MACHINE_ID": name, **(env or {})}
        machine = Machine(name, [
            self.start_consumer("ticks", ticks, env=machine_env, name=f"{name}-ticks"),
            self.start_consumer("sideeffects", sideeffects, env=machine_env, name=f"{name}-sideeffects"),
        ])
        self.machines.append(machine)
        return machine


def database_connections(pid: int, database_url: str) -> int:
    """How many TCP connections process ``pid`` holds to the database server of ``database_url``."""
    port = urlsplit(database_url).port or 5432
    try:
        return sum(1 for conn in psutil.Process(pid).net_connections(kind="tcp") if conn.raddr and conn.raddr.port == port)
    except psutil.NoSuchProcess:
        return 0


@dataclass
class Machine:
    """The consumers of one MACHINE_ID."""

    name: str
    consumers: list[subprocess.Popen]
    killed_at: dict[int, float] = field(default_factory=dict)

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self.consumers]

    def alive(self) -> bool:
        return all(proc.poll() is None for proc in self.consumers)

    def crash(self) -> dict[int, float]:
        """SIGKILL every process of this machine at once, hooks included, as a power cut would.

        The consumers are frozen first (SIGSTOP), so none can start a hook between the
        listing of their descendants and the kill. Returns ``{pid: kill time}`` of every process killed.
        """
        procs = []
        for proc in self.consumers:
            try:
                parent = psutil.Process(proc.pid)
                parent.suspend()
                procs.append(parent)
            except psutil.NoSuchProcess:
                continue
        family = list(procs)
        for parent in procs:
            family += parent.children(recursive=True)
        for member in family:
            try:
                member.send_signal(signal.SIGSTOP)
            except psutil.NoSuchProcess:
                continue
        # Descendants started between the first listing and the freeze of their parents.
        for parent in procs:
            family += [child for child in parent.children(recursive=True) if child not in family]
        now = time.time()
        for member in family:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                continue
            self.killed_at[member.pid] = now
        psutil.wait_procs(family, timeout=10)
        for proc in self.consumers:
            proc.wait(timeout=10)
            self.killed_at[proc.pid] = now
        return dict(self.killed_at)


def orchestrator_terms(audit: Path, killed_at: dict[int, float]) -> list[tuple[float, float, int]]:
    """The leadership terms ``(start, end, pid)`` of orchestrators, from the orchestrator audit.

    A term starts at ``orch-start`` and ends at ``orch-stop``, or at the process's kill
    time, or (for a leader still running at the end of the test) at its last pass.
    """
    terms, open_terms, last_pass = [], {}, {}
    if not audit.exists():
        return []
    for line in audit.read_text().splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("orch-"):
            continue
        kind, ts, pid = parts[0], float(parts[1]), int(parts[2])
        if kind == "orch-start":
            open_terms[pid] = ts
        elif kind == "orch-pass":
            last_pass[pid] = ts
        elif kind == "orch-stop" and pid in open_terms:
            terms.append((open_terms.pop(pid), ts, pid))
    for pid, start in open_terms.items():
        terms.append((start, killed_at.get(pid, last_pass.get(pid, start)), pid))
    return sorted(terms)


def overlapping_terms(terms: list[tuple[float, float, int]]) -> list[str]:
    """Two orchestrators leading at once (each term checked against the one before it)."""
    problems = []
    for (start_a, end_a, pid_a), (start_b, end_b, pid_b) in zip(terms, terms[1:]):
        if start_b < end_a:
            problems.append(f"orchestrator pid {pid_b} took over at {start_b:.3f} while pid {pid_a} led until {end_a:.3f}")
    return problems


def hook_overlaps(audit: Path, killed_at: dict[int, float]) -> list[str]:
    """Two runs of the ``scaleaudit`` hook for one URL at the same time, from its log.

    A run without an end line must have been killed with its machine (``killed_at[pid]``,
    which is also when it ended); otherwise that is a problem too.
    """
    starts: dict[tuple[str, int], float] = {}
    intervals: dict[str, list[tuple[float, float, int]]] = {}
    if not audit.exists():
        return []
    for line in audit.read_text().splitlines():
        kind, url, pid, ts = line.split()[:4]
        if kind == "hook-start":
            starts[(url, int(pid))] = float(ts)
        elif kind == "hook-end":
            began = starts.pop((url, int(pid)), None)
            if began is not None:
                intervals.setdefault(url, []).append((began, float(ts), int(pid)))
    problems = []
    for (url, pid), began in starts.items():
        if pid in killed_at:
            intervals.setdefault(url, []).append((began, killed_at[pid], pid))
        else:
            problems.append(f"hook for {url} (pid {pid}) started and never ended, yet it was not killed")
    for url, runs in intervals.items():
        runs.sort()
        for (a_start, a_end, a_pid), (b_start, b_end, b_pid) in zip(runs, runs[1:]):
            if b_start < a_end:
                problems.append(f"{url}: hook pid {b_pid} started at {b_start:.3f} while pid {a_pid} ran until {a_end:.3f}")
    return problems
