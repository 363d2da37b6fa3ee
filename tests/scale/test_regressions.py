"""Regression tests for engine bugs the scale-out tests found (lost connections, broker
outages, leases, connection leaks, orchestrator latency)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import signal
import subprocess
import threading

import psutil
import pytest
from django.db import OperationalError, connections
from django.utils import timezone

from archivebox.core.models import Crawl, Lease, Machine
from archivebox.lifecycle import hookimpl, plugin_manager
from archivebox.sideeffects import hooks as hook_effects
from archivebox.tasks import actor_types, ticks
from archivebox.tasks.dispatch import dispatch_due
from archivebox.tasks.orchestrator import Orchestrator
from archivebox.config import EngineConfig
from helpers import VENV_BIN, wait_until
from scaletools import ScaleCollection

FAST = {"MAX_TICK_TIME": "2", "ORCHESTRATOR_LEASE_TTL": "2", "HEARTBEAT_INTERVAL": "0.5", "HEARTBEAT_TTL": "3",
        "SWEEP_INTERVAL": "1", "SIDEEFFECT_LOST_AFTER": "1", "HOOK_KILL_GRACE": "0.5"}


class TickRecorder:
    def __init__(self):
        self.starts, self.ends = [], []

    @hookimpl
    def on_actor_tick_start(self, actor_type, obj):
        self.starts.append(obj.pk)

    @hookimpl
    def on_actor_tick_end(self, actor_type, obj):
        self.ends.append(obj.pk)


def test_every_tick_start_has_an_end_even_when_the_transaction_cannot_begin(monkeypatch):
    """When the batch's transaction cannot even begin (a lost connection), every tick that started still ends."""
    crawl = Crawl.objects.create(urls="https://example.com/a", retry_at=timezone.now())
    recorder = TickRecorder()
    plugin_manager().register(recorder)

    @contextlib.contextmanager
    def lost_connection(*args, **kwargs):
        raise OperationalError("the connection is lost")
        yield  # pragma: no cover - a generator-based context manager that fails on entry

    monkeypatch.setattr(ticks.transaction, "atomic", lost_connection)
    try:
        with pytest.raises(OperationalError):
            ticks.run_ticks(actor_types.CRAWL, [crawl.pk], None, EngineConfig.from_env({}))
    finally:
        plugin_manager().unregister(recorder)
    assert recorder.starts == [crawl.pk]
    assert recorder.ends == recorder.starts


def test_slot_leases_name_their_machine():
    """A concurrency slot lease names the machine holding it, as the orchestrator lease does."""
    config = EngineConfig.from_env({})
    Crawl.objects.create(urls="https://example.com/a", retry_at=timezone.now())
    assert dispatch_due(actor_types.CRAWL, config, timezone.now()).dispatched == 1
    held = Lease.objects.get(actor="Crawl", expires_at__isnull=False)
    assert held.machine_id == Machine.current(config.machine_id).pk


def scaleaudit_collection(tmp_path, database_url: str, redis_url: str, **env) -> ScaleCollection:
    collection = ScaleCollection(tmp_path / "data", database_url, redis_url, plugins="scaleaudit", extra_env={**FAST, **env}).init()
    collection.cli("add", "--bg", "https://example.com/slow")
    collection.start_machine("m1", ticks=1, sideeffects=2)
    return collection


def running_hook(collection: ScaleCollection) -> dict | None:
    rows = collection.query("SELECT id, pid FROM core_process WHERE kind = 'hook' AND status = 'running'")
    return next((row for row in rows if row["pid"] and not exited(row["pid"])), None)


def exited(pid: int) -> bool:
    """The process is gone, or a zombie nobody reaped (its waiter is gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def restart_postgres_while_a_hook_runs(collection, private_pg) -> dict:
    """Wait for the hook to run, restart Postgres (SIGQUIT: no clean shutdown), wait for the
    hook to exit; returns the hook's Process row."""
    hook = wait_until(lambda: running_hook(collection), timeout=60, interval=0.02, message="the hook to run")
    private_pg.restart(signal.SIGQUIT)
    wait_until(lambda: exited(hook["pid"]), timeout=30, message="the hook to exit")
    return hook


def test_a_postgres_restart_during_a_hook_does_not_lose_its_outcome(tmp_path, private_pg, redis_url):
    """A Postgres restart while a hook runs: its supervisor keeps waiting and records the exit on a new connection."""
    collection = scaleaudit_collection(tmp_path, private_pg.create_database(), redis_url, SCALEAUDIT_SECONDS="2", TIMEOUT="20")
    try:
        hook = restart_postgres_while_a_hook_runs(collection, private_pg)
        recorded = lambda: collection.query("SELECT status, exit_code FROM core_process WHERE id = %s", (hook["id"],))  # noqa: E731
        wait_until(lambda: recorded() == [{"status": "exited", "exit_code": 0}], timeout=10,
                   message="its waiter to record the exit (the deadline is 50 s away)")
    finally:
        collection.stop_all(signal.SIGINT)


def test_a_postgres_restart_does_not_leave_a_hook_running_past_its_timeout(tmp_path, private_pg, redis_url):
    """A Postgres restart while a hook runs does not leave it unsupervised: its timeout still stops it."""
    collection = scaleaudit_collection(tmp_path, private_pg.create_database(), redis_url, SCALEAUDIT_SECONDS="5", TIMEOUT="2")
    try:
        hook = restart_postgres_while_a_hook_runs(collection, private_pg)
    finally:
        collection.stop_all(signal.SIGINT)
    audit = (collection.root / "hook-audit.log").read_text()
    # Stopped at its 2 s timeout, the hook never reaches its 5 s end line.
    assert f"hook-end https://example.com/slow {hook['pid']} " not in audit


@pytest.mark.parametrize("background", [False, True])
def test_a_hook_run_thread_closes_its_database_connection(background):
    """A hook run's thread closes its own connection when it ends (on Postgres each one
    held a server connection). Pooled, a thread keeps it for the next hook and ends (closing
    it) once idle."""
    used = []

    def query_and_remember():
        Crawl.objects.exists()  # opens this thread's connection, as every hook run does
        used.append((threading.current_thread(), connections["default"]))

    runs = hook_effects.HookRuns(idle=0.2)
    for _ in range(2):
        runs.submit(background, query_and_remember)
        assert runs.join(30) == 0
    (first_thread, first), (second_thread, second) = used
    assert second_thread is first_thread and second is first  # the second hook reused both
    wait_until(lambda: not first_thread.is_alive(), timeout=10, message="the idle thread to end")
    assert first.connection is None  # closed when its thread ended


def test_the_orchestrator_wakes_when_the_next_row_is_due():
    """The orchestrator sleeps only until the next row is due (it used to sleep at least 20 ms, from the pass's start)."""
    now = timezone.now()
    pause = Orchestrator(EngineConfig.from_env({}), []).sleep_until(now + dt.timedelta(milliseconds=5), now)
    assert pause <= 0.006


def test_add_while_redis_is_down_does_not_report_a_failure_for_a_saved_crawl(tmp_path, database_url, private_redis):
    """`add --bg` while Redis is down saves the crawl, warns, and exits 0: a retry would add it twice."""
    collection = ScaleCollection(tmp_path / "data", database_url, private_redis.url).init()
    private_redis.kill(signal.SIGKILL)
    result = collection.cli("add", "--bg", "https://example.com/while-redis-is-down", check=False)
    assert collection.counts("crawl") == {"queued": 1}
    assert result.returncode == 0, result.stderr


def test_postgres_counts_the_snapshots_robots_txt_skipped_from_their_own_index(tmp_path, database_url, redis_url):
    """`status` on Postgres counts robots.txt's skipped snapshots (failed, their last_error
    says so) from the partial index snapshot_robots_skipped: the count is right, and the plan
    reads that index, not every failed snapshot."""
    collection = ScaleCollection(tmp_path / "data", database_url, redis_url).init()
    result = collection.django("""
        from django.db import connection
        from archivebox.core import robots
        from archivebox.core.models import Crawl, Snapshot
        crawl = Crawl.objects.create(urls="https://robots.test/", status="sealed", retry_at=None)
        for i, (status, error) in enumerate([("failed", robots.SKIPPED + " of a.test"), ("failed", robots.SKIPPED + " of b.test"),
                                             ("failed", "wget: exit 8"), ("sealed", robots.SKIPPED + " (a note)")]):
            Snapshot.objects.create(crawl=crawl, url=f"https://robots.test/{i}", status=status, retry_at=None, last_error=error)
        from django.test.utils import CaptureQueriesContext
        with CaptureQueriesContext(connection) as captured:
            counted = robots.skipped()
        with connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = off")  # a table this small is read whole otherwise
            cursor.execute("EXPLAIN " + captured.captured_queries[-1]["sql"])
            result = [counted, " / ".join(row[0] for row in cursor.fetchall())]
    """)
    assert result[0] == 2 and "snapshot_robots_skipped" in result[1], result
    report = json.loads(collection.cli("status", "--json").stdout)
    assert report["robots_skipped"] == 2
    # The index's size is the database's (it said 0 B, of an index.sqlite3 there is not).
    assert report["size"]["index_where"].startswith("Postgres database ") and report["size"]["index_bytes"] > 1_000_000


def test_a_reading_command_on_postgres_does_not_import_redis(tmp_path, database_url, redis_url):
    """`list` and `status` on Postgres hid psycopg from huey.storage only: the driver was
    imported already, and the trick gave up on redis too (70 ms of start-up)."""
    collection = ScaleCollection(tmp_path / "data", database_url, redis_url).init()
    script = ("import sys\nfrom archivebox.cli import main\ncode = main(sys.argv[1:])\n"
              "print(code, 'psycopg' in sys.modules, 'redis' in sys.modules)")
    for argv in (["status"], ["list", "--limit", "1"]):
        done = subprocess.run([str(VENV_BIN / "python"), "-c", script, *argv], cwd=collection.root, env=collection.env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.splitlines()[-1] == "0 True False", (argv, done.stdout, done.stderr)


def test_a_small_sample_of_a_large_postgres_table_is_never_empty(tmp_path, database_url, redis_url):
    """TABLESAMPLE picks whole blocks: asked for a hundred snapshots of a million (two blocks
    expected), it came back empty one time in eight, and `status` could not estimate the
    archive's size. A sample reads at least MIN_BLOCKS blocks."""
    collection = ScaleCollection(tmp_path / "data", database_url, redis_url).init()
    result = collection.django("""
        from django.db import connection
        from archivebox.core import counting
        from archivebox.core.models import Crawl, Snapshot
        crawl = Crawl.objects.create(urls="https://blocks.test/", status="sealed", retry_at=None)
        Snapshot.objects.bulk_create([Snapshot(crawl=crawl, url=f"https://blocks.test/{i}", status="sealed", retry_at=None)
                                      for i in range(20_000)])
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE core_snapshot")
        result = [len(counting.sample(Snapshot, "id", 20_000, 5, 1)) for _ in range(30)]
    """)
    assert min(result) > 0, result
