"""The REST API at /api/v1/, over HTTP against a running ``archivebox server``: tokens, the
browser extension's add, and reading snapshots back, as ArchiveBox's v1 API does."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.helpers import wait_until

from .webtools import PASSWORD, Server, web_collection


def call(server: Server, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    collection = web_collection(tmp_path_factory.mktemp("api") / "data", plugins="noop,titler")
    collection.cli("manage", "shell", "-c", "from django.contrib.auth.models import User; "
                   "User.objects.create_user('reader', password='reader-pass-123')")
    server = Server(collection)
    try:
        server.wait_healthy()
        yield server
    finally:
        server.stop()


def token_of(server: Server, username: str = "admin", password: str = PASSWORD) -> dict:
    return call(server, "POST", "/api/v1/auth/get_api_token", {"username": username, "password": password})[1]


def test_the_browser_extension_gets_a_token_and_adds_a_url_that_then_appears(server):
    got = token_of(server)
    assert got["success"] is True and got["username"] == "admin" and len(got["token"]) == 32 and got["expires"]
    assert call(server, "POST", "/api/v1/auth/check_api_token", {"token": got["token"]})[1]["success"] is True
    url = "https://example.com/from-the-extension"
    # What ArchiveBox's browser extension sends (fields this engine does not use included).
    status, added = call(server, "POST", "/api/v1/cli/add",
                         {"urls": [url], "tag": "ext,reading", "depth": 0, "update": False, "update_all": False,
                          "index_only": False, "overwrite": False, "init": False, "extractors": ""},
                         headers={"X-ArchiveBox-API-Key": got["token"]})
    assert status == 200 and added["success"] is True and added["result"]["queued_urls"] == [url], added
    crawl_id = added["result"]["crawl_id"]
    collection = server.collection
    wait_until(lambda: collection.scalar("SELECT status FROM core_crawl WHERE replace(id, '-', '') = ?",
                                         (crawl_id.replace("-", ""),)) == "sealed", timeout=60, message="the crawl to finish")
    status, page = call(server, "GET", f"/api/v1/core/snapshots?url={urllib.request.quote(url)}",
                        headers={"Authorization": f"Bearer {got['token']}"})
    assert status == 200 and page["count"] == 1 and page["num_items"] == 1
    [snapshot] = page["items"]
    assert snapshot["url"] == url and snapshot["status"] == "sealed" and snapshot["tags"] == ["ext", "reading", "titled"]  # the titler plugin adds its own
    assert snapshot["title"] == f"Title of {url}"
    status, one = call(server, "GET", f"/api/v1/core/snapshot/{snapshot['id']}?api_key={got['token']}")
    assert status == 200 and one["id"] == snapshot["id"] and one["num_archiveresults"] == len(one["archiveresults"]) == 2
    assert {r["plugin"] for r in one["archiveresults"]} == {"noop", "titler"}
    status, results = call(server, "GET", f"/api/v1/core/archiveresults?plugin=titler&api_key={got['token']}")
    assert status == 200 and [r["snapshot_url"] for r in results["items"]] == [url]


def test_requests_without_a_valid_token_are_refused(server):
    for headers in ({}, {"X-ArchiveBox-API-Key": "0" * 32}, {"Authorization": "Bearer nope"}):
        assert call(server, "GET", "/api/v1/core/snapshots", headers=headers)[0] == 401
    assert call(server, "POST", "/api/v1/cli/add", {"urls": ["https://example.com/x"]})[0] in (401, 403)  # 403: no CSRF token
    assert call(server, "POST", "/api/v1/auth/check_api_token", {"token": "nope"})[1] == {"success": False, "user_id": None}


def test_only_staff_users_get_a_token_and_a_revoked_token_stops_working(server):
    assert token_of(server, "reader", "reader-pass-123") == {"success": False, "errors": ["Invalid credentials"]}
    assert token_of(server, "admin", "wrong password")["success"] is False
    token = token_of(server)["token"]
    assert call(server, "GET", "/api/v1/core/snapshots", headers={"X-ArchiveBox-API-Key": token})[0] == 200
    server.collection.cli("manage", "shell", "-c", "from django.utils import timezone; from archivebox.api.models import APIToken; "
                          f"APIToken.objects.filter(token='{token}').update(revoked_at=timezone.now())")
    assert call(server, "GET", "/api/v1/core/snapshots", headers={"X-ArchiveBox-API-Key": token})[0] == 401
    assert token_of(server)["token"] != token  # a new one is handed out


def test_invalid_urls_are_named_and_the_openapi_docs_are_served(server):
    token = token_of(server)["token"]
    status, added = call(server, "POST", "/api/v1/cli/add", {"urls": ["not a url", "ftp://example.com/x"]},
                         headers={"X-ArchiveBox-API-Key": token})
    assert status == 200 and added["success"] is False and len(added["errors"]) == 2
    with urllib.request.urlopen(server.url + "/api/v1/openapi.json", timeout=30) as response:
        schema = json.loads(response.read())
    assert {"/api/v1/cli/add", "/api/v1/core/snapshots", "/api/v1/auth/get_api_token"} <= set(schema["paths"])
    with urllib.request.urlopen(server.url + "/api/v1/docs", timeout=30) as response:
        assert response.status == 200


def test_crawls_are_listed_created_cancelled_and_deleted(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    status, crawl = call(server, "POST", "/api/v1/crawls/crawls",
                         {"urls": ["https://example.com/crawl-api"], "max_depth": 0, "tags": ["api"], "label": "by api"}, headers=auth)
    assert status == 200 and crawl["urls"] == "https://example.com/crawl-api" and crawl["label"] == "by api"
    assert call(server, "POST", "/api/v1/crawls/crawls", {"urls": ["nope"]}, headers=auth)[0] == 400
    listed = call(server, "GET", "/api/v1/crawls/crawls", headers=auth)[1]
    assert crawl["id"] in [c["id"] for c in listed]
    assert call(server, "GET", f"/api/v1/crawls/crawl/{crawl['id']}", headers=auth)[1]["tags_str"] == "api"
    status, patched = call(server, "PATCH", f"/api/v1/crawls/crawl/{crawl['id']}", {"status": "sealed"}, headers=auth)
    assert status == 200 and patched["status"] in ("sealed", "failed") and patched["retry_at"] is None
    status, deleted = call(server, "DELETE", f"/api/v1/crawls/crawl/{crawl['id']}", headers=auth)
    assert status == 200 and deleted["success"] is True
    assert call(server, "GET", f"/api/v1/crawls/crawl/{crawl['id']}", headers=auth)[0] == 404


def test_a_snapshot_is_retitled_retagged_and_deleted_and_tags_are_listed(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    url = "https://example.com/to-edit"
    added = call(server, "POST", "/api/v1/cli/add", {"urls": [url]}, headers=auth)[1]
    collection = server.collection
    wait_until(lambda: collection.scalar("SELECT COUNT(*) FROM core_snapshot WHERE url = ? AND status = 'sealed'", (url,)),
               timeout=60, message="the snapshot to finish")
    [snapshot] = call(server, "GET", f"/api/v1/core/snapshots?url={urllib.request.quote(url)}", headers=auth)[1]["items"]
    status, patched = call(server, "PATCH", f"/api/v1/core/snapshot/{snapshot['id']}",
                           {"title": "A better title", "tags": ["kept", "edited"]}, headers=auth)
    assert status == 200 and patched["title"] == "A better title" and patched["tags"] == ["edited", "kept"]
    tags = call(server, "GET", "/api/v1/core/tags", headers=auth)[1]["items"]
    assert {"edited": 1, "kept": 1}.items() <= {t["name"]: t["num_snapshots"] for t in tags}.items()
    assert call(server, "PATCH", f"/api/v1/core/snapshot/{snapshot['id']}", {"status": "queued"}, headers=auth)[0] == 400
    assert call(server, "DELETE", f"/api/v1/core/snapshot/{snapshot['id']}", headers=auth)[1]["success"] is True
    assert call(server, "GET", f"/api/v1/core/snapshot/{snapshot['id']}", headers=auth)[0] == 404
    assert added["success"] is True


def test_schedules_through_the_api(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    bad = call(server, "POST", "/api/v1/cli/schedule", {"add": True, "every": "sometimes", "import_path": "https://example.com/s"},
               headers=auth)[1]
    assert bad["success"] is False and "sometimes" in bad["errors"][0]
    added = call(server, "POST", "/api/v1/cli/schedule", {"add": True, "every": "weekly", "import_path": "https://example.com/s",
                                                         "tag": "weekly"}, headers=auth)[1]
    assert added["success"] is True and [s["urls"] for s in added["result"]] == [["https://example.com/s"]]
    assert added["result"][0]["cron"] == "0 0 * * 0"
    shown = call(server, "POST", "/api/v1/cli/schedule", {"show": True}, headers=auth)[1]
    assert shown["result"] == added["result"]
    assert call(server, "POST", "/api/v1/cli/schedule", {"clear": True}, headers=auth)[1]["result"] == []


def test_search_through_the_api(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    found = call(server, "POST", "/api/v1/cli/search", {"query": "nothing-is-indexed-here"}, headers=auth)[1]
    assert found["success"] is True and found["result"] == []  # no page was indexed (no search plugin here)
    assert call(server, "POST", "/api/v1/cli/search", {"query": " "}, headers=auth)[1]["success"] is False


def test_add_as_a_persona_through_the_api(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    unknown = call(server, "POST", "/api/v1/cli/add", {"urls": ["https://example.com/p"], "persona": "ghost"}, headers=auth)[1]
    assert unknown["success"] is False and "ghost" in unknown["errors"][0]
    server.collection.cli("persona", "create", "reader-bot", "--user-agent", "ReaderBot/1.0")
    added = call(server, "POST", "/api/v1/cli/add", {"urls": ["https://example.com/p"], "persona": "reader-bot"}, headers=auth)[1]
    assert added["success"] is True
    config = json.loads(server.collection.scalar("SELECT config FROM core_crawl WHERE replace(id, '-', '') = ?",
                                                 (added["result"]["crawl_id"].replace("-", ""),)))
    assert "ReaderBot/1.0" in json.dumps(config)


def test_update_and_remove_through_the_api(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    url = "https://example.com/to-remove"
    call(server, "POST", "/api/v1/cli/add", {"urls": [url]}, headers=auth)
    collection = server.collection
    wait_until(lambda: collection.scalar("SELECT COUNT(*) FROM core_snapshot WHERE url = ? AND status = 'sealed'", (url,)),
               timeout=60, message="the snapshot to finish")
    [snapshot] = call(server, "GET", f"/api/v1/core/snapshots?url={urllib.request.quote(url)}", headers=auth)[1]["items"]
    folder = collection.root / snapshot["archive_path"]
    assert folder.is_dir()
    updated = call(server, "POST", "/api/v1/cli/update", {"filter_patterns": ["to-remove"]}, headers=auth)[1]
    assert updated["success"] is True and updated["result"]["requeued_results"] == 0  # nothing had failed
    assert call(server, "POST", "/api/v1/cli/remove", {}, headers=auth)[1]["success"] is False  # no filter: refused
    bad = call(server, "POST", "/api/v1/cli/remove", {"filter_patterns": ["("], "filter_type": "regex"}, headers=auth)[1]
    assert bad["success"] is False and "invalid regex" in bad["errors"][0]
    removed = call(server, "POST", "/api/v1/cli/remove", {"filter_patterns": [url]}, headers=auth)[1]
    assert removed["success"] is True and removed["result"]["removed_snapshot_ids"] == [snapshot["id"]]
    assert not folder.exists()
    assert call(server, "GET", f"/api/v1/core/snapshot/{snapshot['id']}", headers=auth)[0] == 404


def test_add_takes_only_new_plugins_and_a_bookmarks_import(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    url = "https://example.com/from-the-extension"  # archived by the extension test above
    again = call(server, "POST", "/api/v1/cli/add", {"urls": [url], "only_new": True}, headers=auth)[1]
    assert again["success"] is False and "already archived" in again["errors"][-1]
    unknown = call(server, "POST", "/api/v1/cli/add", {"urls": ["https://example.com/p2"], "plugins": "nosuch"}, headers=auth)[1]
    assert unknown["success"] is False and "nosuch" in unknown["errors"][-1]
    netscape = ('<!DOCTYPE NETSCAPE-Bookmark-file-1>\\n<DL><p><DT><A HREF="https://example.com/bookmarked" ADD_DATE="1700000000" '
                'TAGS="saved">A bookmarked page</A>\\n</DL>')
    added = call(server, "POST", "/api/v1/cli/add", {"urls": [netscape], "plugins": "noop"}, headers=auth)[1]
    assert added["success"] is True and added["result"]["queued_urls"] == ["https://example.com/bookmarked"], added


def test_an_index_only_add_is_archived_by_cli_update(server):
    auth = {"X-ArchiveBox-API-Key": token_of(server)["token"]}
    url = "https://example.com/index-only-by-api"
    status, added = call(server, "POST", "/api/v1/cli/add", {"urls": [url], "index_only": True}, headers=auth)
    assert status == 200 and added["success"] is True, added
    collection = server.collection
    sealed = f"SELECT COUNT(*) FROM core_snapshot WHERE url = '{url}' AND status = 'sealed'"
    wait_until(lambda: collection.scalar(sealed) == 1, timeout=60, message="the index-only snapshot to be sealed")
    results = f"SELECT r.status FROM core_archiveresult r JOIN core_snapshot s ON r.snapshot_id = s.id WHERE s.url = '{url}'"
    assert collection.query(results) == []
    status, updated = call(server, "POST", "/api/v1/cli/update", {"filter_patterns": [url], "filter_type": "exact"}, headers=auth)
    assert status == 200 and updated["result"]["indexed_results_queued"] == 2, updated
    wait_until(lambda: sorted(row[0] for row in collection.query(results)) == ["succeeded", "succeeded"]
               and collection.scalar(sealed) == 1, timeout=60, message="the snapshot to be archived")
