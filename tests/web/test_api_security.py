"""What a token holder may do through the REST API: only what Django's model permissions
allow (as in the admin), and never set config that changes what runs on the server
(a tool's arguments, a binary, plugin folders, a cookies file, paths)."""

from __future__ import annotations

import pytest

from .test_api import call, token_of
from .webtools import Client, Server, web_collection

NOBODY, NOBODY_PASSWORD = "nobody-staff", "nobody-pass-123"
READER, READER_PASSWORD = "reader-staff", "reader-pass-123"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    collection = web_collection(tmp_path_factory.mktemp("apisec") / "data", plugins="noop,titler")
    collection.cli("manage", "shell", "-c", (
        "from django.contrib.auth.models import Permission, User; "
        f"User.objects.create_user('{NOBODY}', password='{NOBODY_PASSWORD}', is_staff=True); "
        f"reader = User.objects.create_user('{READER}', password='{READER_PASSWORD}', is_staff=True); "
        "reader.user_permissions.set(Permission.objects.filter(codename__in=['view_snapshot', 'view_crawl', 'add_crawl']))"))
    server = Server(collection)
    try:
        server.wait_healthy()
        yield server
    finally:
        server.stop()


def crawls(server: Server) -> int:
    return server.collection.scalar("SELECT count(*) FROM core_crawl")


def auth(server: Server, username: str = "admin", password: str | None = None) -> dict:
    got = token_of(server, username, password) if password else token_of(server)
    assert got["success"], got
    return {"X-ArchiveBox-API-Key": got["token"]}


@pytest.mark.parametrize("config, key", [
    ({"WGET_EXTRA_ARGS": ["--post-file=.secret_key"]}, "WGET_EXTRA_ARGS"),
    ({"WGET_ARGS": ["--directory-prefix=plugins/evil"]}, "WGET_ARGS"),
    ({"CHROME_BINARY": "/bin/sh"}, "CHROME_BINARY"),
    ({"PLUGIN_DIRS": "/tmp"}, "PLUGIN_DIRS"),
    ({"COOKIES_FILE": "/etc/shadow"}, "COOKIES_FILE"),
    ({"url_allowlist": ".*"}, "URL_ALLOWLIST"),
    ({"USER_AGENT": "x"}, "USER_AGENT"),
])
def test_config_that_changes_what_runs_is_refused_even_for_a_superuser(server, config, key):
    before = crawls(server)
    status, body = call(server, "POST", "/api/v1/crawls/crawls", {"urls": ["https://example.com/x"], "config": config},
                        headers=auth(server))
    assert status == 422 and key in body["errors"][0] and "cannot be set remotely" in body["errors"][0], body
    assert crawls(server) == before


def test_remote_config_is_checked_against_the_schemas_and_the_installed_plugins(server):
    headers = auth(server)
    before = crawls(server)
    for config, named in (({"TIMEOUT": "soon"}, "TIMEOUT"), ({"PLUGINS": "evil"}, "evil"), ({"MAX_URLS": -1}, "MAX_URLS"),
                          ({"TITLER_TIMEOUT": 0}, "TITLER_TIMEOUT"), ({"PERSONA": "nobody-has-it"}, "nobody-has-it"),
                          ({"PLUGINS": {"a": 1}}, "PLUGINS")):
        status, body = call(server, "POST", "/api/v1/crawls/crawls", {"urls": ["https://example.com/x"], "config": config},
                            headers=headers)
        assert status == 422 and named in body["errors"][0], (config, body)
    assert call(server, "POST", "/api/v1/crawls/crawls", {"urls": ["https://example.com/x"], "max_depth": 42},
                headers=headers)[0] == 422
    assert crawls(server) == before
    status, crawl = call(server, "POST", "/api/v1/crawls/crawls",
                         {"urls": ["https://example.com/allowed"], "config": {"plugins": ["titler"], "TIMEOUT": 30, "titler_enabled": True,
                                                                              "ONLY_NEW": False}}, headers=headers)
    assert status == 200, crawl
    assert crawl["config"] == {"PLUGINS": "titler", "TIMEOUT": "30", "TITLER_ENABLED": "true", "ONLY_NEW": "false"}


def test_cli_add_refuses_plugins_that_are_not_installed(server):
    status, body = call(server, "POST", "/api/v1/cli/add", {"urls": ["https://example.com/y"], "plugins": "evil"},
                        headers=auth(server))
    assert status == 200 and body["success"] is False and "evil" in body["errors"][0]


def test_a_staff_user_without_permissions_can_do_nothing(server):
    headers = auth(server, NOBODY, NOBODY_PASSWORD)
    snapshot = server.collection.scalar("SELECT id FROM core_snapshot LIMIT 1")
    before = crawls(server)
    for method, path, body in (
            ("GET", "/api/v1/core/snapshots", None), ("GET", "/api/v1/core/archiveresults", None), ("GET", "/api/v1/core/tags", None),
            ("GET", "/api/v1/crawls/crawls", None), ("POST", "/api/v1/crawls/crawls", {"urls": ["https://example.com/z"]}),
            ("POST", "/api/v1/cli/add", {"urls": ["https://example.com/z"]}), ("POST", "/api/v1/cli/search", {"query": "x"}),
            ("POST", "/api/v1/cli/remove", {"filter_patterns": ["https://example.com/allowed"]}),
            ("POST", "/api/v1/cli/update", {}), ("POST", "/api/v1/cli/schedule", {"show": True})):
        status, answer = call(server, method, path, body, headers=headers)
        assert status == 403 and "permission denied" in answer["detail"], (method, path, status, answer)
    assert crawls(server) == before
    if snapshot:
        assert call(server, "DELETE", f"/api/v1/core/snapshot/{snapshot}", headers=headers)[0] == 403


def test_permissions_are_honoured_one_by_one(server):
    headers = auth(server, READER, READER_PASSWORD)
    status, crawl = call(server, "POST", "/api/v1/crawls/crawls", {"urls": ["https://example.com/reader"]}, headers=headers)
    assert status == 200, crawl
    assert call(server, "GET", "/api/v1/core/snapshots", headers=headers)[0] == 200
    assert call(server, "GET", "/api/v1/crawls/crawls", headers=headers)[0] == 200
    assert call(server, "GET", "/api/v1/core/archiveresults", headers=headers)[0] == 403  # no view_archiveresult
    assert call(server, "PATCH", f"/api/v1/crawls/crawl/{crawl['id']}", {"status": "sealed"}, headers=headers)[0] == 403
    assert call(server, "DELETE", f"/api/v1/crawls/crawl/{crawl['id']}", headers=headers)[0] == 403
    assert call(server, "GET", f"/api/v1/crawls/crawl/{crawl['id']}", headers=headers)[0] == 200  # still there


@pytest.mark.parametrize("query", ["offset=-1", "page=-1", "limit=0", "offset=99999999999999999999", "page=99999999999999999999"])
def test_bad_pagination_is_a_422_not_a_500(server, query):
    status, body = call(server, "GET", f"/api/v1/core/snapshots?{query}", headers=auth(server))
    assert status == 422, (query, status, body)


def test_the_web_add_page_needs_the_add_crawl_permission(server):
    nobody = Client(server.url)
    nobody.login(NOBODY, NOBODY_PASSWORD)
    assert nobody.get("/add/").status == 403
    reader = Client(server.url)
    reader.login(READER, READER_PASSWORD)
    assert reader.get("/add/").status == 200


def test_the_feed_needs_a_token_whose_user_may_view_snapshots(server):
    nobody = token_of(server, NOBODY, NOBODY_PASSWORD)["token"]
    reader = token_of(server, READER, READER_PASSWORD)["token"]
    anonymous = Client(server.url)
    assert anonymous.get(f"/rss/?api_key={nobody}").status == 302  # to the login page
    assert anonymous.get(f"/rss/?api_key={reader}").status == 200


def test_schedules_from_the_api_that_fire_every_second_or_never_are_refused(server):
    headers = auth(server)
    for every in ("* * * * * *", "* * * * * * *", "0 0 30 2 *"):
        status, body = call(server, "POST", "/api/v1/cli/schedule",
                            {"add": True, "every": every, "import_path": "https://example.com/often"}, headers=headers)
        assert status == 200 and body["success"] is False and len(body["errors"]) == 1, (every, body)
    status, body = call(server, "POST", "/api/v1/cli/schedule",
                        {"add": True, "every": "daily", "depth": 99, "import_path": "https://example.com/deep"}, headers=headers)
    assert body["success"] is False and "depth" in body["errors"][0]
    assert server.collection.scalar("SELECT count(*) FROM core_schedule") == 0
