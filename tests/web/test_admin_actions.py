"""Admin actions over HTTP against a web-only server (`--no-workers`), then real pools finish the work.

Without workers nothing moves by itself, so each action's effect on the rows is seen
exactly; health is 503 until pools run somewhere, then 200.
"""

from __future__ import annotations

import signal

import pytest
from helpers import wait_until

from .webtools import Client, Server, web_collection


@pytest.fixture(scope="module")
def idle(tmp_path_factory):
    collection = web_collection(tmp_path_factory.mktemp("idle") / "data", plugins="noop,flaky", extra_env={"HOOK_MAX_ATTEMPTS": "1"})
    server = Server(collection, "--no-workers")
    client = Client(server.url)
    client.login()
    try:
        yield collection, server, client
    finally:
        collection.stop_all(signal.SIGTERM)
        server.stop()


def crawl_of(collection, url: str) -> dict:
    return dict(collection.query("SELECT c.* FROM core_crawl c WHERE c.urls = ? ORDER BY c.created_at DESC", (url,))[0])


def dashed(hex_id: str) -> str:
    v = hex_id.replace("-", "")
    return f"{v[:8]}-{v[8:12]}-{v[12:16]}-{v[16:20]}-{v[20:]}"


def test_health_is_503_without_pools_and_names_what_is_missing(idle):
    _, server, _ = idle
    status, report = server.health()
    assert status == 503 and report["healthy"] is False
    assert report["orchestrator"]["alive"] is False and report["pools"] == {"ticks": [], "sideeffects": []}


def test_cancel_action_fails_a_queued_crawl_and_its_snapshots(idle):
    collection, _, client = idle
    collection.cli("add", "--bg", "https://example.com/cancel-me")
    crawl = crawl_of(collection, "https://example.com/cancel-me")
    assert crawl["status"] == "queued"
    response = client.post("/admin/core/crawl/", {"action": "cancel", "_selected_action": dashed(crawl["id"])})
    assert response.status == 302
    crawl = crawl_of(collection, "https://example.com/cancel-me")
    assert (crawl["status"], crawl["retry_at"], crawl["last_error"]) == ("failed", None, "cancelled by user")
    assert "Cancelled 1 of 1" in client.get("/admin/core/crawl/").text


def test_retry_action_requeues_a_failed_result_and_pools_then_finish_it(idle):
    collection, server, client = idle
    collection.cli("add", "https://example.com/flaky", check=False)  # runs its own pools: none are alive
    [result] = collection.query("SELECT r.id, r.status FROM core_archiveresult r JOIN core_snapshot s ON s.id = r.snapshot_id "
                                "WHERE s.url = ? AND r.plugin = 'flaky'", ("https://example.com/flaky",))
    assert result["status"] == "failed"
    response = client.post("/admin/core/archiveresult/", {"action": "retry_failed", "_selected_action": dashed(result["id"])})
    assert response.status == 302
    assert collection.scalar("SELECT status FROM core_archiveresult WHERE id = ?", (result["id"],)) == "queued"
    assert collection.scalar("SELECT status FROM core_snapshot WHERE url = ?", ("https://example.com/flaky",)) == "queued"

    collection.start_consumer("ticks", workers=2)
    collection.start_consumer("sideeffects", workers=4)
    server.wait_healthy()
    wait_until(lambda: collection.scalar("SELECT status FROM core_archiveresult WHERE id = ?", (result["id"],)) == "succeeded",
               timeout=60, message="the retried result to succeed")
    collection.stop_all(signal.SIGTERM)


def test_resnapshot_action_makes_a_new_crawl_of_the_same_urls(idle):
    collection, _, client = idle
    collection.cli("add", "--bg", "https://example.com/again")
    snapshot_crawl = crawl_of(collection, "https://example.com/again")
    client.post("/admin/core/crawl/", {"action": "cancel", "_selected_action": dashed(snapshot_crawl["id"])})
    before = collection.scalar("SELECT COUNT(*) FROM core_crawl")
    response = client.post("/admin/core/crawl/", {"action": "resnapshot", "_selected_action": dashed(snapshot_crawl["id"])})
    assert response.status == 302
    # The cancelled crawl never made snapshots: nothing to re-snapshot, and the admin says so.
    assert collection.scalar("SELECT COUNT(*) FROM core_crawl") == before
    assert "Nothing to re-snapshot" in client.get("/admin/core/crawl/").text

    sealed = collection.query("SELECT id FROM core_snapshot WHERE url = ?", ("https://example.com/flaky",))[0]["id"]
    response = client.post("/admin/core/snapshot/", {"action": "resnapshot", "_selected_action": dashed(sealed)})
    assert response.status == 302
    newest = crawl_of(collection, "https://example.com/flaky")
    assert newest["label"] == "re-snapshot of 1 snapshot(s)" and newest["status"] == "queued" and newest["retry_at"]


def test_adding_a_crawl_in_the_admin_validates_urls_and_queues_it(idle):
    collection, _, client = idle
    bad = client.post("/admin/core/crawl/add/", {"urls": "https://example.com/ok\nnot a url", "max_depth": "0",
                                                  "tags_str": "", "label": "", "_save": "Save"})
    assert bad.status == 200 and "invalid URL" in bad.text
    good = client.post("/admin/core/crawl/add/", {"urls": "https://example.com/from-admin", "max_depth": "1",
                                                   "tags_str": "web", "label": "from the admin", "_save": "Save"})
    assert good.status == 302
    crawl = crawl_of(collection, "https://example.com/from-admin")
    assert (crawl["status"], crawl["max_depth"], crawl["label"]) == ("queued", 1, "from the admin") and crawl["retry_at"]
