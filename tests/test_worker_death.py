"""A worker that dies at the worst moment loses no hook outcome and runs no hook twice.

Each test reproduces the exact window of a defect seen under chaos (random SIGKILLs of
real pools): a hook ending successfully while no worker watches it; a background hook
whose worker dies while its snapshot goes on. (The worker dying between a hook's spawn and
the record of its PID: tests/hooks/test_sweeps.py.) The ``ledger`` test plugin appends
``start``/``end`` lines per run.
"""

import os
import signal

import psutil
import pytest
from helpers import wait_until

from hooks.util import collection

LEDGER_HOOK = "on_Snapshot__10_ledger.sh"


def ledger(coll, name: str = "ledger.txt") -> list[str]:
    path = coll.root / name
    return path.read_text().split("\n")[:-1] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("forkserver", ["false", "true"])
def test_a_hook_that_succeeds_while_no_worker_runs_is_recorded_as_succeeded_and_not_run_again(tmp_path, forkserver):
    """Defect 2: a hook that finished successfully after its worker died was recorded as
    "gone: no exit code was recorded" and run again. Now its wrapper's exit status and its
    stdout log record it as it ended."""
    coll = collection(tmp_path, "ledger", FORKSERVER=forkserver, LEDGER_SECONDS="2", HOOK_MAX_ATTEMPTS="3")
    coll.cli("add", "--bg", "https://example.com/ends-alone")
    coll.start_consumer("ticks", 2)
    effects = coll.start_consumer("sideeffects", 2)
    try:
        wait_until(lambda: len(ledger(coll)) == 1, timeout=30, message="the hook to start")
        hook_pid = int(ledger(coll)[0].split()[1])
        os.kill(effects.pid, signal.SIGKILL)
        effects.wait()
        wait_until(lambda: len(ledger(coll)) == 2 and not alive(hook_pid), timeout=30, message="the hook to end with nobody watching")
        coll.start_consumer("sideeffects", 2)
        wait_until(lambda: coll.counts("crawl") == {"sealed": 1}, timeout=60, message="the crawl to finish")
        [result] = coll.query("SELECT status, attempts, output_str FROM core_archiveresult")
        assert (result["status"], result["attempts"], result["output_str"]) == ("succeeded", 1, "ledgered")
        assert [line.split()[0] for line in ledger(coll)] == ["start", "end"]  # never run again
        [row] = coll.query("SELECT exit_code, reason FROM core_process WHERE kind='hook'")
        assert (row["exit_code"], row["reason"]) == (0, "")
    finally:
        coll.stop_all(signal.SIGINT)


def test_a_background_hook_whose_worker_dies_is_adopted_and_succeeds_while_its_snapshot_goes_on(tmp_path):
    """Defect 3: background results ended failed because their worker died (their row was
    closed as gone, and the snapshot sealed before the retry). Now the hook runs on, the
    next worker adopts it, and it is recorded as it ended."""
    coll = collection(tmp_path, "ledgerbg,sleepy", LEDGERBG_SECONDS="3", HOOK_MAX_ATTEMPTS="1")
    coll.cli("add", "--bg", "https://example.com/bg-orphan")
    coll.start_consumer("ticks", 2)
    effects = coll.start_consumer("sideeffects", 2, env={"SLEEPY_SECONDS": "6"})
    try:
        wait_until(lambda: len(ledger(coll, "ledger-bg.txt")) == 1
                   and coll.scalar("SELECT COUNT(*) FROM core_process WHERE kind='hook' AND status='running'") == 2,
                   timeout=30, message="the background hook and the slow foreground hook to run")
        os.kill(effects.pid, signal.SIGKILL)
        effects.wait()
        coll.start_consumer("sideeffects", 2, env={"SLEEPY_SECONDS": "6"})
        wait_until(lambda: coll.counts("crawl") == {"sealed": 1}, timeout=60, message="the crawl to finish")
        results = {r["plugin"]: (r["status"], r["attempts"]) for r in coll.query("SELECT plugin, status, attempts FROM core_archiveresult")}
        assert results == {"ledgerbg": ("succeeded", 1), "sleepy": ("succeeded", 1)}
        assert [line.split()[0] for line in ledger(coll, "ledger-bg.txt")] == ["start", "end"]
    finally:
        coll.stop_all(signal.SIGINT)
