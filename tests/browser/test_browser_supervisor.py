"""The shared browser of a worker, driven directly: start, lease, crash, hang, recycle, stop,
and the sweep of a browser whose worker is gone. Real Chromium, real Process rows."""

import dataclasses
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request

import psutil
import pytest
from django.conf import settings

from archivebox.core.models import Machine, Process
from archivebox.process import browser as browser_mod
from archivebox.process import registry, runner
from archivebox.process.browser import BROWSER, Browser, BrowserUnavailable, responsive
from archivebox.process.registry import register_worker
from archivebox.process.sweep import sweep_workers
from archivebox.sideeffects import browsing
from browsersite import CHROME, chromium_processes, wait_gone
from helpers import wait_until

needs_chrome = pytest.mark.skipif(CHROME is None, reason="chromium is not installed")


def config(**changes):
    return dataclasses.replace(settings.ENGINE, browser_check_interval=0.2, browser_hang_timeout=1.0, **changes)


@pytest.fixture
def browser():
    shared = Browser(config())
    yield shared
    shared.stop()


def http_url(lease):
    return lease.cdp_url.replace("ws://", "http://").split("/devtools/")[0]


@needs_chrome
def test_a_lease_starts_one_browser_shared_by_the_next(browser):
    with browser.lease() as first:
        assert responsive(http_url(first), 2)
        row = Process.objects.get(kind="browser")
        assert (row.status, row.pid, row.label) == ("running", first.pid, "chromium")
        with browser.lease() as second:
            assert (second.cdp_url, second.pid) == (first.cdp_url, first.pid)  # the same browser, one more tab
            # each lease holds a tab slot of its own (the lowest free one), whose file lives in the browser's profile
            assert (os.path.basename(first.tab_file), os.path.basename(second.tab_file)) == ("0.json", "1.json")
            assert os.path.dirname(first.tab_file) == os.path.join(row.pwd, "tabs")
        with browser.lease() as third:
            assert third.tab_file == second.tab_file  # a slot given back is taken again
    with browser.lease() as again:
        assert again.tab_file == first.tab_file  # every slot was given back: the lowest is free
    profile = row.pwd
    browser.stop()
    row.refresh_from_db()
    assert (row.status, row.reason) == ("exited", "stopped with its worker")
    assert chromium_processes([profile]) == [] and not os.path.exists(profile)


@needs_chrome
def test_tabs_are_bounded():
    shared = Browser(config(browser_max_tabs=2))
    held, peak, lock = [], [0], threading.Lock()

    def page():
        with shared.lease():
            with lock:
                held.append(1)
                peak[0] = max(peak[0], len(held))
            time.sleep(0.3)
            with lock:
                held.pop()

    try:
        threads = [threading.Thread(target=page) for _ in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert peak[0] == 2
    finally:
        shared.stop()


@needs_chrome
def test_a_crashed_browser_is_replaced_and_its_leases_are_lost(browser):
    with browser.lease() as first:
        os.kill(first.pid, signal.SIGKILL)
        assert browser.lost(first.generation)  # asked by the hook run that failed with it
    old = Process.objects.get(pid=first.pid, kind="browser")
    assert old.status == "exited" and old.reason.startswith("crashed")
    with browser.lease() as second:
        assert second.generation != first.generation and responsive(http_url(second), 2)
        assert not browser.lost(second.generation)


@needs_chrome
def test_a_hung_browser_is_killed_by_the_watchdog(browser):
    with browser.lease() as first:
        os.kill(first.pid, signal.SIGSTOP)  # alive, but answers nothing
        wait_until(lambda: browser.lost(first.generation), timeout=15, message="the watchdog to find it hung")
    old = Process.objects.get(pid=first.pid, kind="browser")
    assert old.status == "exited" and old.reason.startswith("hung")
    assert wait_gone([psutil.Process(first.pid)] if psutil.pid_exists(first.pid) else []) == []
    with browser.lease() as second:
        assert responsive(http_url(second), 2)


@needs_chrome
def test_a_browser_over_its_memory_limit_is_recycled_between_pages():
    shared = Browser(config(browser_max_memory=1))  # 1 MB: always over
    started, done = [], threading.Event()

    def next_page():
        with shared.lease() as lease:
            started.append(lease)
            done.wait(30)

    waiter = threading.Thread(target=next_page)
    try:
        with shared.lease() as first:
            assert shared.check() == "recycle"
            assert not shared.lost(first.generation)
            waiter.start()
            time.sleep(0.5)
            assert started == []  # no new page while the browser waits to be recycled
        wait_until(lambda: started, timeout=30, message="the next page in a new browser")
        [second] = started
        assert second.generation != first.generation and not shared.lost(first.generation)
        old = Process.objects.get(pid=first.pid, kind="browser")
        assert old.reason == "recycled: over BROWSER_MAX_MEMORY"
    finally:
        done.set()
        if waiter.is_alive():
            waiter.join(timeout=30)
        shared.stop()


def test_without_chromium_a_lease_says_why():
    shared = Browser(config(chrome_binary="/nonexistent/chromium"))
    with pytest.raises(BrowserUnavailable, match=r"chromium not installed \(CHROME_BINARY=/nonexistent/chromium not found\)"):
        with shared.lease():
            pass
    assert not Process.objects.filter(kind="browser").exists()


def test_a_stopping_worker_refuses_leases(browser):
    browser.stop()
    with pytest.raises(BrowserUnavailable, match="the worker is stopping"):
        with browser.lease():
            pass


@needs_chrome
def test_the_sweep_kills_the_browser_of_a_dead_worker(tmp_path):
    """A browser row whose worker is gone: another worker's sweep kills its whole group."""
    machine = Machine.current(settings.ENGINE.machine_id)
    worker = register_worker(machine, "sideeffects pool", 15, pool="sideeffects")
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()
    Process.objects.filter(pk=worker.pk).update(pid=dead.pid, pid_started=1.0)  # its process is gone
    profile = str(tmp_path / "profile")
    cmd = [CHROME, *browser_mod.CHROME_FLAGS[:-1], f"--user-data-dir={profile}", "about:blank"]  # no pipe to die with
    row, _ = runner.create(kind=Process.Kind.BROWSER, cmd=cmd, pwd=profile, env={}, timeout=None, machine=machine,
                           parent=worker, label="chromium")
    os.makedirs(profile)
    running = runner.launch(row, {**runner.base_env(), "HOME": profile, "DBUS_SESSION_BUS_ADDRESS": "disabled:"})
    try:
        wait_until(lambda: os.path.exists(os.path.join(profile, "DevToolsActivePort")), timeout=20, message="chromium")
        family = chromium_processes([profile])
        assert len(family) > 1
        assert sweep_workers(machine, exclude_pid=os.getpid()) >= 1
        assert wait_gone(family) == []
        row.refresh_from_db()
        assert row.status == "exited" and row.reason.startswith("gone")
    finally:
        registry._current.pop(os.getpid(), None)  # this test process is no worker
        if running.handle.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
            running.handle.wait()


@needs_chrome
def test_a_hook_run_gets_the_endpoint_and_its_left_tab_is_closed(tmp_path):
    """browser_for, as the hook runner uses it: the endpoint in the hook's env and the crawl's
    chrome/ folder (abx-plugins' files), and the tab the hook named in target_id.txt closed
    after it (a hook killed mid-visit cannot close its own)."""
    hook_dir = tmp_path / "snap" / "chrome"
    hook_dir.mkdir(parents=True)
    env = {}
    try:
        with browsing.browser_for({"CHROME_CDP_URL": {}}, env, tmp_path / "crawl", hook_dir) as lease:
            http = http_url(lease)
            opened = urllib.request.urlopen(urllib.request.Request(f"{http}/json/new?about:blank", method="PUT"))
            target = json.load(opened)["id"]
            (hook_dir / "target_id.txt").write_text(target)
            assert target in tab_ids(http)
            assert env["CHROME_CDP_URL"] == lease.cdp_url and env["CHROME_KEEPALIVE"] == "true"
            assert env["CHROME_TAB_FILE"] == lease.tab_file and lease.tab_file
            published = tmp_path / "crawl" / "chrome"
            assert (published / "cdp_url.txt").read_text() == lease.cdp_url
            assert (published / "chrome.pid").read_text() == str(lease.pid)
            assert json.loads((published / "browser.json").read_text())["ready"] is True
        wait_until(lambda: target not in tab_ids(http), timeout=10, message="the left tab to close")
        # a plugin that does not declare CHROME_CDP_URL, or whose user set it, gets none
        with browsing.browser_for({"TITLE_ENABLED": {}}, {}, tmp_path / "crawl", hook_dir) as none:
            assert none is None
        with browsing.browser_for({"CHROME_CDP_URL": {}}, {"CHROME_CDP_URL": "ws://elsewhere:9222/x"}, tmp_path / "crawl",
                                  hook_dir) as none:
            assert none is None
        # a background hook (a crawl-long service) shares the browser without holding a tab
        service_env = {}
        with browsing.browser_for({"CHROME_CDP_URL": {}}, service_env, tmp_path / "crawl", hook_dir, background=True) as svc:
            assert service_env["CHROME_CDP_URL"] == svc.cdp_url
            assert "CHROME_TAB_FILE" not in service_env  # it holds no tab slot
            with BROWSER.lease() as tab:
                assert os.path.basename(tab.tab_file) == "0.json"  # the first slot is still free
    finally:
        BROWSER.stop()
        BROWSER.reopen()


def tab_ids(http):
    return [target["id"] for target in json.load(urllib.request.urlopen(f"{http}/json/list"))]


def test_hook_runs_publishing_the_endpoint_at_once_do_not_trip_over_each_other(tmp_path, caplog):
    """Hook runs of one crawl start together and each writes the crawl's chrome/ files; each
    write went through one temp file name per process, so one run's rename could take the
    other's file away ('could not publish the browser endpoint')."""
    folder = tmp_path / "crawl" / "chrome"
    leases = [browser_mod.Lease(f"ws://127.0.0.1:{9000 + n}/devtools/browser/x", 100 + n, n) for n in range(8)]
    for _ in range(30):
        start = threading.Barrier(len(leases))

        def publish(lease):
            start.wait()
            browsing.publish(folder, lease)
        threads = [threading.Thread(target=publish, args=(lease,)) for lease in leases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert (folder / "cdp_url.txt").read_text() in {lease.cdp_url for lease in leases}
        leases.reverse()
    assert not [r for r in caplog.records if "could not publish" in r.getMessage()]
    assert sorted(p.name for p in folder.iterdir()) == ["browser.json", "cdp_url.txt", "chrome.pid"]  # no temp files left
