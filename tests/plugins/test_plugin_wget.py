"""wget hook: save the page with its requisites, no crawling, links converted."""
import json
import os
import shutil

import pytest

from localsite import closed_port

pytestmark = pytest.mark.skipif(shutil.which("wget") is None, reason="GNU wget is not installed")


def _requests_since(site, start):
    return site.server.requests[start:]


def test_wget_saves_page_and_requisites_only(site, snapshot_factory):
    page = site.info.pages[4]
    start = len(site.server.requests)
    snap = snapshot_factory(page.url)
    run = snap.run("wget")
    assert run.returncode == 0, run
    assert run.status == "succeeded"
    main = run.result["output_str"]
    assert main.endswith("page-05.html")
    assert not os.path.isabs(main) and ".." not in main
    main_path = run.path(main)
    with open(main_path, encoding="utf-8") as f:
        html = f.read()
    assert page.word in html
    host_dir = os.path.dirname(main_path)
    # requisites saved: stylesheet, the page's image, the CSS background, the declared icon
    for rel in (site.info.css_path, site.info.background_path, site.info.image_paths[page.index % 3]):
        assert os.path.isfile(os.path.join(host_dir, rel.lstrip("/"))), rel
    # links converted for local viewing: the stylesheet now points at the local copy
    assert 'href="static/style.css"' in html
    # the unconverted copy is kept for parsers
    info = json.loads(open(run.path("wget.json")).read())
    assert info["original_file"] == main + ".orig"
    assert 'href="/static/style.css"' in open(run.path(info["original_file"]), encoding="utf-8").read()
    assert info["content_type"].startswith("text/html")
    # no crawling: no other page fetched, nothing fetched through the other host name
    reqs = _requests_since(site, start)
    paths = {r.path for r in reqs}
    assert paths & {p.path for p in site.info.pages} == {page.path}
    assert site.info.missing_path not in paths
    assert not any(r.host.startswith("localhost") for r in reqs)
    assert not os.path.exists(run.path("localhost+" + str(site.server.port)))
    assert all(r.user_agent == run_user_agent() for r in reqs)


def run_user_agent():
    from plugintools import config_env
    return config_env("wget")["WGET_USER_AGENT"]


def test_wget_404_is_a_permanent_failure(site, snapshot_factory):
    run = snapshot_factory(site.url(site.info.missing_path)).run("wget")
    assert run.returncode == 0, run
    assert run.status == "failed"
    assert run.result["output_str"].startswith("404")


def test_wget_503_is_transient(site, snapshot_factory):
    run = snapshot_factory(site.url("/status/503")).run("wget", check_contract=False)
    assert run.returncode != 0, run
    assert "HTTP 503" in run.stderr


def test_wget_connection_refused_is_transient(snapshot_factory):
    run = snapshot_factory(f"http://127.0.0.1:{closed_port()}/").run("wget")
    assert run.returncode != 0, run
    assert not run.results


def test_wget_timeout_is_honoured(site, snapshot_factory):
    run = snapshot_factory(site.url("/slow?delay=30")).run("wget", env={"WGET_TIMEOUT": "2"})
    assert run.returncode != 0, run
    assert run.duration < 8
    assert "timed out" in run.stderr


def test_wget_missing_binary_is_skipped(site, snapshot_factory):
    run = snapshot_factory(site.url("/page-01.html")).run("wget", env={"WGET_BINARY": "/nonexistent/wget"})
    assert run.returncode == 0 and run.status == "skipped"
    assert "not installed" in run.result["output_str"]


def test_wget_warc(site, snapshot_factory):
    run = snapshot_factory(site.url("/page-02.html")).run("wget", env={"WGET_SAVE_WARC": "true"})
    assert run.status == "succeeded", run
    warc = run.result["output_json"]["warc_file"]
    assert warc and warc.startswith("warc/") and warc.endswith(".warc.gz")
    import gzip
    with gzip.open(run.path(warc), "rb") as f:
        data = f.read()
    assert data.startswith(b"WARC/1.")
    assert site.info.pages[1].word.encode() in data


def test_wget_non_html_document(site, snapshot_factory):
    run = snapshot_factory(site.url(site.info.rss_path)).run("wget")
    assert run.status == "succeeded", run
    info = json.loads(open(run.path("wget.json")).read())
    assert info["content_type"].startswith("application/rss+xml")
    assert info["main_file"].endswith("feed.rss")


@pytest.mark.parametrize("path, suffix, final", [
    ("/", "/index.html", "/"),
    ("/redirect?to=/page-03.html", "/redirect@to=%2Fpage-03.html", "/page-03.html"),
    ("/slow?delay=0", "/slow@delay=0.html", "/slow?delay=0"),
])
def test_wget_main_file_names(site, snapshot_factory, path, suffix, final):
    run = snapshot_factory(site.url(path)).run("wget")
    assert run.status == "succeeded", run
    main = run.result["output_str"]
    assert main.endswith(suffix) and os.path.isfile(run.path(main)), main
    with open(run.path(main), "rb") as f:
        assert b"<html" in f.read().lower()
    info = json.loads(open(run.path("wget.json")).read())
    assert info["url"] == site.url(final)
    assert info["content_type"].startswith("text/html")
