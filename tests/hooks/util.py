"""Helpers of the hook-runner tests.

In-process tests build Crawl/Snapshot/ArchiveResult rows by hand and run the real
``run_hook`` side effect (real subprocesses, real SQLite) and real ticks. End-to-end tests
use :class:`helpers.Collection`: the real ``archivebox`` CLI and real ``huey_consumer``s.
"""

from __future__ import annotations

import atexit
import datetime as dt
import os
import shutil
import signal
import tempfile
import threading
import uuid
from pathlib import Path

import psutil
from django.conf import settings
from django.utils import timezone

from archivebox.config import EngineConfig
from archivebox.core.models import SNAPSHOTS_STEP, ArchiveResult, Crawl, Process, Snapshot
from archivebox.hooks.discovery import is_background, parse_hook_name
from archivebox.sideeffects import hooks as hook_effects
from archivebox.sideeffects.hooks import run_hook
from archivebox.tasks import registry as actor_registry
from archivebox.tasks.ticks import run_tick
from helpers import Collection, wait_until

HOUR = dt.timedelta(hours=1)

# Short timeouts so the end-to-end runs take seconds, not minutes.
FAST = {
    "HOOK_KILL_GRACE": "0.5", "HOOK_RETRY_BACKOFF": "0.2", "HOOK_MAX_ATTEMPTS": "1", "SIDEEFFECT_LOST_AFTER": "1",
    "HEARTBEAT_INTERVAL": "0.5", "HEARTBEAT_TTL": "3", "SWEEP_INTERVAL": "1", "MAX_TICK_TIME": "2",
    "ORCHESTRATOR_LEASE_TTL": "2", "ORCHESTRATOR_IDLE_POLL": "0.2", "TICK_BACKOFF_BASE": "0.1",
}


# Processes ------------------------------------------------------------------------

def pid_dead(pid: int) -> bool:
    """Gone, or a zombie (PID 1 here does not reap orphans, so a killed orphan may linger as one)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_all_dead(family: dict[str, int], timeout: float, what: str) -> None:
    """Wait until every process of ``family`` (name -> pid) is dead; fail naming the survivors."""
    try:
        wait_until(lambda: all(pid_dead(pid) for pid in family.values()), timeout=timeout, message=what)
    except AssertionError:
        survivors = {name: pid for name, pid in family.items() if not pid_dead(pid)}
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; still alive: {survivors}") from None


def group_dead(pgid: int) -> bool:
    """No live (non-zombie) process is left in process group ``pgid``."""
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return False
        except (ProcessLookupError, psutil.Error):
            continue
    return True


def kill_quietly(*pids: int) -> None:
    """Clean-up for a test that failed half-way: leave no stray process behind."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_recorded(root: Path, *names: str) -> None:
    """Clean-up: SIGKILL every pid that hooks recorded in files called ``names`` under ``root``."""
    for name in names:
        for path in root.rglob(name):
            try:
                kill_quietly(int(path.read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                continue


class RssSampler:
    """Samples the peak RSS of one process in a background thread while the block runs."""

    def __init__(self, pid: int, interval: float = 0.02):
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
                self.samples += 1
            except psutil.Error:
                return
            self._stop.wait(self.interval)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# In-process rows --------------------------------------------------------------------

def make_snapshot(url: str = "https://example.com/page", *, depth: int = 0, max_depth: int = 0,
                  crawl_config: dict | None = None, snapshot_config: dict | None = None, crawl: Crawl | None = None) -> Snapshot:
    """A started crawl (past its own hooks) with one started snapshot and its folder."""
    now = timezone.now()
    if crawl is None:
        crawl = Crawl.objects.create(urls=url, status="started", current_step=SNAPSHOTS_STEP, max_depth=max_depth,
                                     config=crawl_config or {}, started_at=now, retry_at=now + HOUR)
    snapshot = Snapshot.objects.create(crawl=crawl, url=url, depth=depth, status="started", config=snapshot_config or {},
                                       started_at=now, retry_at=now + HOUR)
    snapshot.output_dir.mkdir(parents=True, exist_ok=True)
    return snapshot


def started_result(owner, plugin: str, hook_name: str, attempts: int = 1) -> ArchiveResult:
    """An ArchiveResult as the queued -> started transition leaves it (attempt ``attempts``)."""
    now = timezone.now()
    snapshot = owner if isinstance(owner, Snapshot) else None
    crawl = snapshot.crawl if snapshot else owner
    return ArchiveResult.objects.create(crawl=crawl, snapshot=snapshot, plugin=plugin, hook_name=hook_name,
                                        step=parse_hook_name(Path(hook_name), plugin).step, background=is_background(hook_name), status="started",
                                        attempts=attempts, started_at=now, retry_at=now + HOUR)


def run_attempt(result: ArchiveResult, timeout: float = 30) -> Process:
    """Run the real side effect for the result's current attempt and wait until the hook has
    ended and been recorded (the hook may run under a supervisor thread); return its Process row."""
    run_hook.call_local(result.pk, result.attempts)
    key = f"hook:{result.pk}:{result.attempts}"
    wait_until(lambda: Process.objects.filter(key=key, status="exited").exists(), timeout=timeout, message=f"{key} to end")
    hook_effects.RUNS.join(timeout)  # its last writes (waking the result) are done too
    return Process.objects.get(key=key)


def engine_config(**overrides) -> EngineConfig:
    return EngineConfig(**{"data_dir": settings.DATA_DIR, "hook_max_attempts": 3, "hook_retry_backoff": 0.5,
                           "hook_kill_grace": 0.5, **overrides})


def tick_result(result: ArchiveResult, config: EngineConfig | None = None, now: dt.datetime | None = None) -> ArchiveResult:
    """One real tick of the result (it is made due first); returns the row as the tick left it."""
    now = now or timezone.now()
    ArchiveResult.objects.filter(pk=result.pk).update(retry_at=now)
    run_tick(actor_registry.get("ArchiveResult"), result.pk, None, config or engine_config(), now=now)
    return ArchiveResult.objects.get(pk=result.pk)


# End-to-end -------------------------------------------------------------------------

_TEMPLATE: list[Path] = []


def collection(tmp_path: Path, plugins: str, **env: str) -> Collection:
    """A fresh collection in ``tmp_path/data``: a copy of one ``archivebox init``-ed for the session
    (``init`` costs about a second of Django start-up and migrations; a copy, milliseconds)."""
    if not _TEMPLATE:
        template = Path(tempfile.mkdtemp(prefix="abx-hooks-template-")) / "data"
        Collection(template).init()
        atexit.register(shutil.rmtree, template.parent, ignore_errors=True)
        _TEMPLATE.append(template)
    shutil.copytree(_TEMPLATE[0], tmp_path / "data")
    return Collection(tmp_path / "data", plugins=plugins, extra_env={**FAST, **env})


def results(coll: Collection) -> dict[tuple[str, str], dict]:
    """``{(url, hook_name): result}`` from ``archivebox list --json``."""
    return {(snap["url"], r["hook_name"]): r for snap in coll.list_json() for r in snap["results"]}


def snapshot_dir(coll: Collection, url: str) -> Path:
    """The snapshot's folder (ids are stored as 32 hex digits; folders use the dashed form)."""
    return coll.root / "archive" / str(uuid.UUID(coll.scalar("SELECT id FROM core_snapshot WHERE url=?", (url,))))


def hook_rows(coll: Collection, label_like: str = "%") -> list[dict]:
    return [dict(r) for r in coll.query("SELECT * FROM core_process WHERE kind='hook' AND label LIKE ? ORDER BY created_at",
                                        (label_like,))]


def run_with_pools(coll: Collection, *args: str, timeout: float = 60) -> None:
    """``add --bg ARGS`` then :func:`run_pools`."""
    coll.cli("add", "--bg", *args)
    run_pools(coll, timeout=timeout)


def unfinished(coll: Collection) -> int:
    """Rows still to be finished: crawls, snapshots, results and hook processes (long-lived
    worker-side processes such as pools and fork servers are not work)."""
    return sum(coll.scalar(f"SELECT COUNT(*) FROM core_{table} WHERE retry_at IS NOT NULL{extra}")
               for table, extra in (("crawl", ""), ("snapshot", ""), ("archiveresult", ""), ("process", " AND kind='hook'")))


def run_pools(coll: Collection, timeout: float = 60) -> None:
    """Real ``huey_consumer`` pools until every row is final; the pools are stopped after."""
    coll.start_consumer("ticks", 2)
    coll.start_consumer("sideeffects", 8)
    try:
        wait_until(lambda: unfinished(coll) == 0, timeout=timeout, interval=0.1, message="every row final")
    finally:
        coll.stop_all(signal.SIGINT)


def timeline(path: Path) -> dict[str, dict[str, float]]:
    """``{hook file: {"start": t, "end": t}}`` from lines ``<hook> start|end <epoch>``."""
    marks: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        name, what, when = line.split()
        marks.setdefault(name, {})[what] = float(when)
    return marks


def db_time(value: str | None) -> float | None:
    """A datetime column as SQLite stores it (naive UTC text) -> epoch seconds."""
    if value is None:
        return None
    return dt.datetime.fromisoformat(value).replace(tzinfo=dt.timezone.utc).timestamp()
