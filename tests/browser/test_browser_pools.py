"""The shared browser under real ``huey_consumer`` pools: killed mid-capture it is replaced and
its snapshots retried, and no Chromium of ours is left after SIGTERM, or SIGKILL + sweep."""

import json
import os
import signal

import pytest

from browsersite import BROWSER_PLUGINS, CHROME, browser_profiles, chromium_processes, mixed_pages, wait_gone
from helpers import Collection, wait_until
from localsite import SiteServer

needs_chrome = pytest.mark.skipif(CHROME is None, reason="chromium is not installed")

FAST = {"HEARTBEAT_INTERVAL": "0.5", "HEARTBEAT_TTL": "3", "SWEEP_INTERVAL": "1", "SIDEEFFECT_LOST_AFTER": "1",
        "HOOK_RETRY_BACKOFF": "0.1", "MAX_TICK_TIME": "2", "ORCHESTRATOR_LEASE_TTL": "2",
        "BROWSER_CHECK_INTERVAL": "0.5", "BROWSER_HANG_TIMEOUT": "2"}


def slow_pages(root, count):
    """Pages whose load waits 3 s for an image: a browser killed meanwhile is killed mid-capture."""
    pages = mixed_pages(root, count)
    for page in pages:
        path = root / page.path.lstrip("/")
        path.write_text(path.read_text().replace("</body>", "<img src='/slowimg?delay=3'></body>"))
    return pages


def running(collection, sql):
    rows = collection.query(sql)
    return rows[0] if rows else None


def running_browser(collection):
    return running(collection, "SELECT id, pid, pwd FROM core_process WHERE kind='browser' AND status='running'")


def running_chrome_hook(collection):
    return running(collection, "SELECT p.id FROM core_process p JOIN core_archiveresult r ON p.archiveresult_id = r.id "
                               "WHERE r.plugin='chrome' AND p.status='running'")


@needs_chrome
def test_a_browser_killed_mid_capture_is_replaced_and_its_snapshots_retried(tmp_path):
    pages = slow_pages(tmp_path / "site", 3)
    collection = Collection(tmp_path / "data", plugins=BROWSER_PLUGINS, extra_env=FAST).init()
    with SiteServer(str(tmp_path / "site")) as server:
        collection.cli("add", "--bg", *(server.base_url + p.path for p in pages))
        collection.start_consumer("ticks", 2)
        collection.start_consumer("sideeffects", 4)
        wait_until(lambda: running_chrome_hook(collection), timeout=60, message="a page load")
        browser = wait_until(lambda: running_browser(collection), timeout=30, message="the browser")
        os.kill(browser["pid"], signal.SIGKILL)

        wait_until(lambda: collection.counts("crawl") == {"sealed": 1}, timeout=120, message="the crawl to seal")
        snapshots = {s["url"].removeprefix(server.base_url): s for s in collection.list_json()}
        for page in pages:
            results = {r["plugin"]: r["status"] for r in snapshots[page.path]["results"]}
            assert set(results.values()) == {"succeeded"}, (page.path, results)
            assert snapshots[page.path]["title"] == page.title
        old = collection.query("SELECT status, reason FROM core_process WHERE id=?", (browser["id"],))[0]
        assert old["status"] == "exited" and old["reason"].startswith("crashed"), tuple(old)
        assert collection.scalar("SELECT COUNT(*) FROM core_process WHERE kind='browser'") >= 2
        # the page loads it cut short were run again without counting as attempts
        cut = [json.loads(row["result_json"]) for row in collection.query(
            "SELECT p.result_json FROM core_process p JOIN core_archiveresult r ON p.archiveresult_id = r.id "
            "WHERE r.plugin='chrome' AND p.exit_code != 0")]
        assert cut and all(outcome["outcome"]["kind"] == "interrupted" and "shared browser crashed or hung" in outcome["outcome"]["reason"]
                          for outcome in cut), cut

        profiles = browser_profiles(collection)
        collection.stop_all(signal.SIGTERM)
    assert collection.query("SELECT id FROM core_process WHERE kind='browser' AND status != 'exited'") == []
    assert chromium_processes(profiles) == []


@needs_chrome
def test_no_chromium_is_left_after_sigkill_and_the_sweep(tmp_path):
    pages = slow_pages(tmp_path / "site", 2)
    collection = Collection(tmp_path / "data", plugins=BROWSER_PLUGINS, extra_env=FAST).init()
    with SiteServer(str(tmp_path / "site")) as server:
        collection.cli("add", "--bg", *(server.base_url + p.path for p in pages))
        collection.start_consumer("ticks", 2)
        effects = collection.start_consumer("sideeffects", 4)
        wait_until(lambda: running_chrome_hook(collection), timeout=60, message="a page load")
        browser = wait_until(lambda: running_browser(collection), timeout=30, message="the browser")
        family = chromium_processes([browser["pwd"]])
        assert family

        os.killpg(effects.pid, signal.SIGKILL)
        effects.wait()
        # Chromium's end of its pipe to the worker closed: it quits by itself
        assert wait_gone(family, timeout=20) == []
        # another worker's sweep closes the row, and the snapshots are archived after all
        collection.start_consumer("sideeffects", 4)
        wait_until(lambda: collection.query("SELECT reason FROM core_process WHERE id=? AND status='exited'",
                                            (browser["id"],)), timeout=30, message="the sweep to close the browser row")
        wait_until(lambda: collection.counts("crawl") == {"sealed": 1}, timeout=120, message="the crawl to seal")
        assert {r["status"] for s in collection.list_json() for r in s["results"]} == {"succeeded"}
        profiles = browser_profiles(collection)
        collection.stop_all(signal.SIGTERM)
    assert collection.query("SELECT id FROM core_process WHERE kind='browser' AND status != 'exited'") == []
    assert chromium_processes(profiles) == []
