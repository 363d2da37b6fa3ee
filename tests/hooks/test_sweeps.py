"""Sweeps: Process rows whose process is gone are closed (exit code NULL); orphaned hooks are killed."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from django.conf import settings
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Machine, Process
from archivebox.process import runner
from archivebox.sideeffects.hooks import sweep_machine

from .util import collection, kill_quietly, make_snapshot, pid_dead, started_result, wait_all_dead, wait_until

HOUR = dt.timedelta(hours=1)


def machine() -> Machine:
    return Machine.current(settings.ENGINE.machine_id)


def dead_pid() -> tuple[int, float]:
    proc = subprocess.Popen(["true"])
    started = runner.start_time(proc.pid)
    proc.wait()
    return proc.pid, started


def worker_row(pid: int, pid_started: float | None, *, status: str = "running", on: Machine | None = None) -> Process:
    return Process.objects.create(kind=Process.Kind.WORKER, machine=on or machine(), status=status, pid=pid, pid_started=pid_started,
                                  label="test pool", retry_at=None if status == "exited" else timezone.now() + HOUR)


def live_worker() -> Process:
    me = psutil.Process()
    return worker_row(me.pid, me.create_time())


def dead_worker() -> Process:
    return worker_row(*dead_pid())


def hook_row(pid: int | None, pid_started: float | None, parent: Process | None, *, pwd: Path | str = "", status: str = "running",
             result: ArchiveResult | None = None, on: Machine | None = None) -> Process:
    return Process.objects.create(kind=Process.Kind.HOOK, machine=on or machine(), parent=parent, status=status, pid=pid,
                                  pid_started=pid_started, pwd=str(pwd), label="plugin/on_Snapshot__10_x.sh",
                                  archiveresult=result, retry_at=timezone.now() + HOUR)


def spawn_group(folder: Path) -> tuple[subprocess.Popen, list[int]]:
    """A hook-like process group started by "another worker": a leader, a child, and a .pid-file daemon."""
    folder.mkdir(parents=True, exist_ok=True)
    code = ("import os, subprocess, sys, time\n"
            "kid = subprocess.Popen(['sleep', '60'])\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        open('daemon.pid', 'w').write(str(os.getpid()))\n"
            "        time.sleep(60)\n"
            "    os._exit(0)\n"
            "open('pids.tmp', 'w').write(f'{kid.pid}\\n')\n"
            "os.rename('pids.tmp', 'pids')\n"
            "time.sleep(60)\n")
    leader = subprocess.Popen([sys.executable, "-I", "-c", code], cwd=folder, start_new_session=True)
    wait_until(lambda: (folder / "pids").exists() and (folder / "daemon.pid").exists() and (folder / "daemon.pid").read_text(),
               timeout=10, message="the group to start")
    return leader, [leader.pid, int((folder / "pids").read_text()), int((folder / "daemon.pid").read_text())]


# In-process sweeps -------------------------------------------------------------------------------

def test_a_worker_row_whose_process_is_gone_is_closed_with_an_unknown_exit_code():
    gone = dead_worker()
    alive = live_worker()
    assert sweep_machine(machine(), grace=0.2) == 1
    gone.refresh_from_db()
    alive.refresh_from_db()
    assert (gone.status, gone.exit_code, gone.reason) == ("exited", None, "gone: worker exited without closing its row")
    assert gone.retry_at is None and gone.ended_at is not None
    assert alive.status == "running"


def test_a_hook_row_whose_process_and_worker_are_gone_is_closed_as_gone_and_its_result_woken(use_plugins):
    snapshot = make_snapshot()
    result = started_result(snapshot, "noop", "on_Snapshot__10_noop.sh")
    row = hook_row(*dead_pid(), dead_worker(), result=result)
    before = timezone.now()
    sweep_machine(machine(), grace=0.2)
    row.refresh_from_db()
    assert (row.status, row.exit_code, row.reason) == ("exited", None, "gone: no exit code was recorded")
    # woken to judge it (it was parked an hour ahead; a wake makes it due, or claims it for a tick at once)
    assert ArchiveResult.objects.get(pk=result.pk).retry_at <= before + dt.timedelta(seconds=settings.ENGINE.slot_ttl + 5)


def test_a_live_hook_whose_worker_is_gone_is_killed_by_process_group_and_pid_file(tmp_path):
    leader, pids = spawn_group(tmp_path / "hook")
    try:
        row = hook_row(leader.pid, runner.start_time(leader.pid), dead_worker(), pwd=tmp_path / "hook")
        assert sweep_machine(machine(), grace=0.5) >= 1
        row.refresh_from_db()
        assert (row.status, row.exit_code, row.reason) == ("exited", None, "killed: its worker was gone")
        wait_until(lambda: all(pid_dead(pid) for pid in pids), timeout=5, message="the orphan's whole family dead")
    finally:
        kill_quietly(*pids)
        leader.wait()


def test_a_hook_whose_worker_row_was_closed_counts_as_orphaned_even_if_that_pid_lives(tmp_path):
    """The worker row is exited (its pool stopped); the PID is alive (it is us), but the row says the worker is gone."""
    leader, pids = spawn_group(tmp_path / "hook")
    try:
        closed_worker = worker_row(os.getpid(), psutil.Process().create_time(), status="exited")
        row = hook_row(leader.pid, runner.start_time(leader.pid), closed_worker, pwd=tmp_path / "hook")
        sweep_machine(machine(), grace=0.5)
        row.refresh_from_db()
        assert row.reason == "killed: its worker was gone"
        wait_until(lambda: all(pid_dead(pid) for pid in pids), timeout=5, message="the orphan's family dead")
    finally:
        kill_quietly(*pids)
        leader.wait()


def test_hooks_of_a_live_worker_and_hooks_without_a_worker_are_left_alone(tmp_path):
    mine, mine_pids = spawn_group(tmp_path / "mine")
    loose, loose_pids = spawn_group(tmp_path / "loose")
    try:
        owned = hook_row(mine.pid, runner.start_time(mine.pid), live_worker(), pwd=tmp_path / "mine")
        unowned = hook_row(loose.pid, runner.start_time(loose.pid), None, pwd=tmp_path / "loose")
        # a dead hook of a live worker is left to that worker, which records its end
        waiting = hook_row(*dead_pid(), live_worker())
        assert sweep_machine(machine(), grace=0.2) == 0
        for row in (owned, unowned, waiting):
            row.refresh_from_db()
            assert row.status == "running"
        assert not any(pid_dead(pid) for pid in mine_pids + loose_pids)
    finally:
        kill_quietly(*mine_pids, *loose_pids)
        mine.wait()
        loose.wait()


def test_a_dead_hook_without_a_worker_is_closed(tmp_path):
    row = hook_row(*dead_pid(), None)
    sweep_machine(machine(), grace=0.2)
    row.refresh_from_db()
    assert (row.status, row.exit_code, row.reason) == ("exited", None, "gone: no exit code was recorded")


def test_a_reused_pid_is_not_killed_by_the_sweep(tmp_path):
    """The orphan's PID now belongs to an unrelated process (faked: same PID, another start time)."""
    bystander = subprocess.Popen(["sleep", "60"], cwd=tmp_path, start_new_session=True)
    try:
        row = hook_row(bystander.pid, runner.start_time(bystander.pid) - 30, dead_worker(), pwd=tmp_path)
        sweep_machine(machine(), grace=0.2)
        row.refresh_from_db()
        assert (row.status, row.reason) == ("exited", "gone: no exit code was recorded")
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_queued_hook_of_a_gone_worker_is_closed_as_never_launched():
    row = hook_row(None, None, dead_worker(), status="queued")
    sweep_machine(machine(), grace=0.2)
    row.refresh_from_db()
    assert (row.status, row.exit_code, row.reason, row.pid) == ("exited", None, "never launched: its worker was gone", None)


def test_the_sweep_touches_only_its_own_machine_and_skips_the_excluded_pid(tmp_path):
    other = Machine.objects.create(guid="elsewhere", hostname="elsewhere")
    theirs = worker_row(*dead_pid(), on=other)
    pid, started = dead_pid()
    excluded = worker_row(pid, started)
    assert sweep_machine(machine(), grace=0.2, exclude_pid=pid) == 0
    for row in (theirs, excluded):
        row.refresh_from_db()
        assert row.status == "running"


# Real consumers -----------------------------------------------------------------------------------

def hang_descendants(folder: Path) -> dict[str, int]:
    return {kind: int(pid) for kind, pid in (line.split() for line in (folder / "descendants.txt").read_text().splitlines())}


def running_hang(coll) -> dict | None:
    rows = coll.query("SELECT * FROM core_process WHERE kind='hook' AND status='running'")
    if not rows:
        return None
    folder = Path(rows[0]["pwd"])
    return dict(rows[0]) if (folder / "ready").exists() else None


# With the fork server, the start-up sweep is covered by test_regressions.py
# (test_with_the_fork_server_a_sigkilled_consumers_hook_daemon_is_killed_too).
def test_a_sigkilled_sideeffects_consumer_leaves_a_hook_that_the_next_consumer_kills_on_start(tmp_path):
    # no periodic sweep during the test: only the new consumer's start-up sweep can act
    coll = collection(tmp_path, "h_hang", H_HANG_TIMEOUT="120", HOOK_MAX_ATTEMPTS="1", SWEEP_INTERVAL="600", FORKSERVER="false")
    coll.cli("add", "--bg", "https://example.com/orphan")
    coll.start_consumer("ticks", 2)
    first = coll.start_consumer("sideeffects", 4)
    family: dict[str, int] = {}
    try:
        hook = wait_until(lambda: running_hang(coll), timeout=30, message="the hook to run with its descendants")
        family = hang_descendants(Path(hook["pwd"]))
        assert set(family) == {"hook", "child", "grandchild", "escaped", "daemon"}
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        assert not any(pid_dead(pid) for pid in family.values())  # SIGKILLing the worker leaves the hook running

        coll.start_consumer("sideeffects", 4)
        wait_all_dead(family, 20, "the orphaned hook's family to die")
        wait_until(lambda: coll.scalar("SELECT status FROM core_process WHERE id=?", (hook["id"],)) == "exited", timeout=10,
                   message="the orphan's row closed")
        [row] = coll.query("SELECT status, exit_code, reason FROM core_process WHERE id=?", (hook["id"],))
        assert (row["status"], row["exit_code"], row["reason"]) == ("exited", None, "killed: its worker was gone")
        # the sweep closes the worker's row after its hooks (and its fork server, stopped with a grace)
        wait_until(lambda: coll.scalar("SELECT status FROM core_process WHERE kind='worker' AND pid=?", (first.pid,)) == "exited",
                   timeout=20, message="the dead worker's row closed")
        [old_worker] = coll.query("SELECT status, exit_code, reason FROM core_process WHERE kind='worker' AND pid=?", (first.pid,))
        assert (old_worker["status"], old_worker["exit_code"]) == ("exited", None)
        wait_until(lambda: coll.counts("crawl") == {"sealed": 1}, timeout=30, message="the crawl to finish")
        [result] = coll.query("SELECT status, output_str FROM core_archiveresult")
        assert result["status"] == "failed" and "killed: its worker was gone" in result["output_str"]
    finally:
        kill_quietly(*family.values())
        coll.stop_all(signal.SIGINT)


@pytest.mark.parametrize("forkserver", ["false", "true"])  # Python hooks as plain subprocesses, then as forks
def test_a_running_consumer_sweeps_periodically_what_a_dead_one_left(tmp_path, forkserver):
    coll = collection(tmp_path, "h_hang", H_HANG_TIMEOUT="120", HOOK_MAX_ATTEMPTS="1", SWEEP_INTERVAL="1", FORKSERVER=forkserver)
    coll.cli("add", "--bg", "https://example.com/periodic")
    coll.start_consumer("ticks", 2)
    doomed = coll.start_consumer("sideeffects", 4)
    family: dict[str, int] = {}
    try:
        hook = wait_until(lambda: running_hang(coll), timeout=30, message="the hook to run")
        family = hang_descendants(Path(hook["pwd"]))
        survivor = coll.start_consumer("sideeffects", 4)
        wait_until(lambda: coll.scalar("SELECT COUNT(*) FROM core_process WHERE kind='worker' AND status='running' AND pid=?",
                                       (survivor.pid,)), timeout=20, message="the second consumer to register")
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
        wait_all_dead(family, 20, "the periodic sweep to kill the orphan")
        wait_until(lambda: coll.scalar("SELECT status FROM core_process WHERE id=?", (hook["id"],)) == "exited", timeout=10,
                   message="the orphan's row closed")
        [row] = coll.query("SELECT status, exit_code, reason FROM core_process WHERE id=?", (hook["id"],))
        # both running pools sweep; the one that does not kill it may close the row first, as "gone"
        assert (row["status"], row["exit_code"]) == ("exited", None)
        assert row["reason"] in ("killed: its worker was gone", "gone: no exit code was recorded")
        wait_until(lambda: coll.scalar("SELECT status FROM core_process WHERE kind='worker' AND pid=?", (doomed.pid,)) == "exited",
                   timeout=20, message="the dead worker's row closed")
        [dead] = coll.query("SELECT exit_code, reason FROM core_process WHERE kind='worker' AND pid=?", (doomed.pid,))
        assert dead["exit_code"] is None and dead["reason"] == "gone: worker exited without closing its row"
    finally:
        kill_quietly(*family.values())
        coll.stop_all(signal.SIGINT)
