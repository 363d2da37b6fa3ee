"""headers hook: fetch the URL and save its response headers."""
import json

import pytest

from localsite import closed_port


def test_headers_success(site, snapshot_factory):
    snap = snapshot_factory(site.url("/page-01.html"))
    run = snap.run("headers")
    assert run.returncode == 0, run
    assert run.status == "succeeded"
    assert run.result["output_str"] == "headers.json"
    data = json.loads(open(run.path("headers.json")).read())
    assert data["status"] == 200
    assert data["url"] == site.url("/page-01.html")
    assert data["headers"]["Content-Type"].startswith("text/html")
    assert run.result["output_json"]["status"] == 200


def test_headers_follows_redirects(site, snapshot_factory):
    snap = snapshot_factory(site.url("/redirect?to=/page-02.html"))
    run = snap.run("headers")
    assert run.status == "succeeded", run
    data = json.loads(open(run.path("headers.json")).read())
    assert data["url"] == site.url("/page-02.html")
    assert data["requested_url"] == site.url("/redirect?to=/page-02.html")
    assert data["redirects"] == [{"status": 302, "url": site.url("/redirect?to=/page-02.html")}]


def test_headers_404_is_a_permanent_failure(site, snapshot_factory):
    snap = snapshot_factory(site.url(site.info.missing_path))
    run = snap.run("headers")
    assert run.returncode == 0, run
    assert run.status == "failed"
    assert run.result["output_str"] == "404 Not Found"
    assert json.loads(open(run.path("headers.json")).read())["status"] == 404


@pytest.mark.parametrize("code", [503, 500, 429])
def test_headers_5xx_and_429_are_transient(site, snapshot_factory, code):
    """The server may recover: exit non-zero (retried later), keeping what was recorded."""
    run = snapshot_factory(site.url(f"/status/{code}")).run("headers", check_contract=False)
    assert run.returncode != 0, run
    assert f"HTTP {code}" in run.stderr
    assert json.loads(open(run.path("headers.json")).read())["status"] == code


def test_headers_410_is_a_permanent_failure(site, snapshot_factory):
    run = snapshot_factory(site.url("/status/410")).run("headers")
    assert run.returncode == 0 and run.status == "failed"
    assert run.result["output_str"].startswith("410")


def test_headers_connection_refused_is_transient(snapshot_factory):
    snap = snapshot_factory(f"http://127.0.0.1:{closed_port()}/")
    run = snap.run("headers")
    assert run.returncode != 0, run
    assert not run.results
    assert "refused" in run.stderr.lower()


def test_headers_timeout_is_honoured(site, snapshot_factory):
    snap = snapshot_factory(site.url("/slow?delay=20"))
    run = snap.run("headers", env={"HEADERS_TIMEOUT": "1"})
    assert run.returncode != 0, run
    assert run.duration < 5
    assert "timed out" in run.stderr


def test_headers_non_http_url_skipped(snapshot_factory):
    run = snapshot_factory("ftp://127.0.0.1/file.txt").run("headers")
    assert run.returncode == 0 and run.status == "skipped"
