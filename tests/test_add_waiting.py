"""A foreground ``add`` never waits on pools that are gone.

It leaves the work to pools running elsewhere while they are alive, and runs its own as soon
as they are not: pools stopped or killed while it waits, and pools killed a moment before it
started (their heartbeats still look fresh, but their processes are gone).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from tests.helpers import VENV_BIN, Collection, wait_until


@pytest.fixture
def collection(tmp_path):
    return Collection(tmp_path / "data", plugins="sleepy", extra_env={"SLEEPY_SECONDS": "2"}).init()


def start_worker(collection: Collection) -> subprocess.Popen:
    worker = subprocess.Popen([str(VENV_BIN / "archivebox"), "worker"], cwd=collection.root, env=collection.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until(lambda: json.loads(collection.cli("status", "--json").stdout)["healthy"], timeout=60,
               message="the worker's pools to be alive")
    return worker


def start_add(collection: Collection, url: str) -> subprocess.Popen:
    return subprocess.Popen([str(VENV_BIN / "archivebox"), "add", url], cwd=collection.root, env=collection.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(add: subprocess.Popen, timeout: float = 90) -> tuple[int, str]:
    try:
        out, err = add.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(add.pid, signal.SIGKILL)
        out, err = add.communicate()
        raise AssertionError(f"add still waiting after {timeout}s:\n{out}\n{err}") from None
    return add.returncode, out


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_pools_that_go_away_while_add_waits_are_replaced_by_its_own(collection, how):
    worker = start_worker(collection)
    add = start_add(collection, "https://example.com/left-behind")
    try:
        # The worker's pools take the crawl: the add is waiting on them.
        wait_until(lambda: collection.scalar("SELECT COUNT(*) FROM core_process WHERE kind='hook'"), timeout=60,
                   message="the worker to start the hook")
        os.killpg(worker.pid, how)
        worker.wait(timeout=60)
        code, out = finish(add)
    finally:
        for proc in (worker, add):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert code == 0, out
    assert collection.counts("crawl") == {"sealed": 1} and collection.counts("snapshot") == {"sealed": 1}


def test_add_right_after_pools_were_killed_does_not_trust_their_fresh_heartbeats(collection):
    worker = start_worker(collection)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    # Their rows still say "running" with a heartbeat that has not expired yet.
    assert collection.scalar("SELECT COUNT(*) FROM core_process WHERE kind='worker' AND status='running'") >= 2
    code, out = finish(start_add(collection, "https://example.com/after-kill"), timeout=60)
    assert code == 0, out
    assert collection.counts("crawl") == {"sealed": 1}


def test_two_foreground_adds_at_once_both_finish_whichever_ends_first(collection):
    slow = start_add(collection, "https://example.com/slow")
    wait_until(lambda: collection.scalar("SELECT COUNT(*) FROM core_process WHERE kind='worker' AND status='running'") >= 2,
               timeout=60, message="the first add's pools")
    quick = subprocess.Popen([str(VENV_BIN / "archivebox"), "add", "https://example.com/quick"], cwd=collection.root,
                             env={**collection.env, "SLEEPY_SECONDS": "0.1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        assert finish(slow)[0] == 0
        assert finish(quick)[0] == 0
    finally:
        for proc in (slow, quick):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert collection.counts("crawl") == {"sealed": 2}


def test_update_right_after_pools_were_killed_runs_its_own(tmp_path):
    coll = Collection(tmp_path / "data", plugins="flaky", extra_env={"HOOK_MAX_ATTEMPTS": "1"}).init()
    coll.cli("add", "https://example.com/flaky", check=False)
    assert coll.counts("archiveresult") == {"failed": 1}
    worker = start_worker(coll)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    result = coll.cli("update", timeout=90)
    assert "Done: 0 result(s) still failed." in result.stdout, result.stdout
    assert coll.counts("archiveresult") == {"succeeded": 1}
