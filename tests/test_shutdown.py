"""Shutdown of real ``huey_consumer`` pools: one signal is graceful, a second is immediate."""

import os
import signal

import psutil
import pytest
from helpers import Collection, wait_until

FAST = {"HEARTBEAT_INTERVAL": "0.5", "HEARTBEAT_TTL": "3", "SWEEP_INTERVAL": "1", "SIDEEFFECT_LOST_AFTER": "1",
        "HOOK_RETRY_BACKOFF": "0.1", "MAX_TICK_TIME": "2", "ORCHESTRATOR_LEASE_TTL": "2"}


def running_hook(collection):
    rows = collection.query("SELECT id, pid FROM core_process WHERE kind='hook' AND status='running'")
    return rows[0] if rows else None


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_one_signal_stops_the_running_hook_records_it_and_a_restart_finishes(tmp_path, sig):
    collection = Collection(tmp_path / "data", plugins="sleepy", extra_env={**FAST, "HOOK_KILL_GRACE": "2"}).init()
    collection.cli("add", "--bg", "https://example.com/slow")
    ticks = collection.start_consumer("ticks", 2)
    effects = collection.start_consumer("sideeffects", 2, env={"SLEEPY_SECONDS": "60"})
    hook = wait_until(lambda: running_hook(collection), timeout=30, message="the hook to run")

    os.killpg(effects.pid, sig)
    assert effects.wait(timeout=15) == 0
    assert not alive(hook["pid"])
    process = collection.query("SELECT status, reason, exit_code FROM core_process WHERE id=?", (hook["id"],))[0]
    assert process["status"] == "exited" and process["reason"] == "worker shutting down"
    workers = collection.query("SELECT status, reason FROM core_process WHERE kind='worker' AND pid=?", (effects.pid,))
    assert [tuple(w) for w in workers] == [("exited", "stopped")]

    collection.start_consumer("sideeffects", 2, env={"SLEEPY_SECONDS": "0.1"})
    wait_until(lambda: collection.counts("crawl") == {"sealed": 1}, timeout=60, message="the crawl sealed after a restart")
    [result] = collection.query("SELECT status, attempts FROM core_archiveresult")
    assert tuple(result) == ("succeeded", 2)

    os.killpg(ticks.pid, signal.SIGINT)
    assert ticks.wait(timeout=15) == 0
    collection.stop_all(signal.SIGINT)
    # Nothing stays claimed past its lease: the orchestrator lease was given back, and any
    # slot still held (a dispatched batch nobody consumed) expires within one slot TTL.
    assert collection.query("SELECT key FROM core_lease WHERE key='orchestrator' AND holder != ''") == []
    late = collection.query("SELECT key FROM core_lease WHERE holder != '' AND expires_at > datetime('now', '+4 seconds')")
    assert late == []


def test_a_second_signal_exits_at_once_and_leaves_no_hook_behind(tmp_path):
    collection = Collection(tmp_path / "data", plugins="stubborn", extra_env={**FAST, "HOOK_KILL_GRACE": "60"}).init()
    collection.cli("add", "--bg", "https://example.com/stubborn")
    collection.start_consumer("ticks", 2)
    effects = collection.start_consumer("sideeffects", 2)
    hook = wait_until(lambda: running_hook(collection), timeout=30, message="the hook to run")

    os.killpg(effects.pid, signal.SIGTERM)
    # The hook ignores SIGTERM, so the graceful stop waits out its 60 s grace...
    with pytest.raises(AssertionError):
        wait_until(lambda: effects.poll() is not None, timeout=1.5, message="a graceful exit")
    assert alive(hook["pid"])
    # ...until a second signal cuts it short.
    os.killpg(effects.pid, signal.SIGTERM)
    effects.wait(timeout=10)
    wait_until(lambda: not alive(hook["pid"]), timeout=5, message="the hook to be killed")
    process = collection.query("SELECT status, reason FROM core_process WHERE id=?", (hook["id"],))[0]
    assert process["status"] == "exited" and process["reason"] == "worker shutting down: stopped at once"
    collection.stop_all(signal.SIGINT)


def test_hooks_waiting_for_a_hook_thread_at_shutdown_are_closed_and_run_after_a_restart(tmp_path):
    """With HOOK_CONCURRENCY=1 a second foreground hook waits for the one hook thread; a
    graceful stop closes it unlaunched (nothing lost, the attempt does not count), and a
    restart runs it."""
    collection = Collection(tmp_path / "data", plugins="sleepy",
                            extra_env={**FAST, "HOOK_KILL_GRACE": "2", "HOOK_CONCURRENCY": "1", "SNAPSHOT_MAX_ACTIVE": "4"}).init()
    collection.cli("add", "--bg", "https://example.com/slow/1", "https://example.com/slow/2")
    ticks = collection.start_consumer("ticks", 2)
    effects = collection.start_consumer("sideeffects", 2, env={"SLEEPY_SECONDS": "60"})
    wait_until(lambda: running_hook(collection), timeout=30, message="the first hook to run")
    # the second result started too; its run waits for the hook thread, with no Process row yet
    wait_until(lambda: collection.counts("archiveresult") == {"started": 2}, timeout=30,
               message="the second hook waiting for the hook thread")
    assert collection.scalar("SELECT COUNT(*) FROM core_process WHERE kind='hook'") == 1

    os.killpg(effects.pid, signal.SIGTERM)
    assert effects.wait(timeout=15) == 0
    reasons = sorted(row["reason"] for row in collection.query("SELECT reason FROM core_process WHERE kind='hook'"))
    assert reasons == ["worker shutting down", "worker shutting down before the hook started"]

    collection.start_consumer("sideeffects", 2, env={"SLEEPY_SECONDS": "0.1"})
    wait_until(lambda: collection.counts("crawl") == {"sealed": 1}, timeout=60, message="the crawl sealed after a restart")
    assert sorted(tuple(r) for r in collection.query("SELECT status, attempts FROM core_archiveresult")) == [("succeeded", 2)] * 2
    os.killpg(ticks.pid, signal.SIGINT)
    assert ticks.wait(timeout=15) == 0
