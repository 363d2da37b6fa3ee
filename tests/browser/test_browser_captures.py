"""One shared browser, one page load per snapshot, the right captures: `archivebox add` of a
generated site (static and script-rendered pages, the hard cases) with the browser plugins."""

import json
import uuid

import pytest

from browsersite import (BROWSER_PLUGINS, CHROME, browser_profiles, chromium_processes, mhtml_html, mixed_pages,
                         pdf_pages, png_size, special_pages)
from helpers import Collection
from localsite import SiteServer

needs_chrome = pytest.mark.skipif(CHROME is None, reason="chromium is not installed")


def results_by_plugin(snapshot):
    return {r["plugin"]: r for r in snapshot["results"]}


@needs_chrome
def test_static_and_script_rendered_pages(tmp_path):
    site_root = tmp_path / "site"
    pages = mixed_pages(site_root, 4)
    specials = special_pages(site_root)
    wanted = [*pages, specials["popups"], specials["slowimage"], specials["lazy"]]
    collection = Collection(tmp_path / "data", plugins=BROWSER_PLUGINS,
                            extra_env={"CHROME_RESOLUTION": "800,600", "BROWSER_MAX_TABS": "2",
                                       "USER_AGENT": "ArchiverTest/1.0"}).init()
    with SiteServer(str(site_root)) as server:
        urls = [server.base_url + page.path for page in wanted] + [server.base_url + "/missing.html"]
        collection.cli("add", *urls, timeout=240)
        snapshots = {s["url"].removeprefix(server.base_url): s for s in collection.list_json()}
        # One page load per attempt of the chrome plugin (the previous design made four per
        # snapshot): each page was requested by the browser with the configured user agent.
        attempts = {row["url"].removeprefix(server.base_url): row["attempts"] for row in collection.query(
            "SELECT s.url, r.attempts FROM core_archiveresult r JOIN core_snapshot s ON r.snapshot_id = s.id "
            "WHERE r.plugin='chrome'")}
        popup_loads = len([r for r in server.requests if r.path == "/static-001.html"])
        for page in wanted:
            agents = [r.user_agent for r in server.requests if r.path == page.path]
            # (Chromium may send a request twice when the test server closed its keep-alive connection.)
            assert 1 <= len(agents) <= 2 * attempts[page.path] and set(agents) == {"ArchiverTest/1.0"}, (page.path, agents)

    for page in wanted:
        snapshot = snapshots[page.path]
        results = results_by_plugin(snapshot)
        assert {p: r["status"] for p, r in results.items()} == dict.fromkeys(BROWSER_PLUGINS.split(","), "succeeded"), page
        assert snapshot["title"] == page.title
        folder = collection.root / snapshot["output_dir"]
        width, height = png_size(folder / "screenshot" / "screenshot.png")
        assert width == 800 and height >= 600
        assert pdf_pages(folder / "pdf" / "output.pdf") >= 1
        dom = (folder / "dom" / "output.html").read_text()
        assert page.word in dom and f"<title>{page.title}</title>" in dom
        assert page.word in (folder / "htmltotext" / "htmltotext.txt").read_text()
        assert page.word in mhtml_html(folder / "mhtml" / "page.mhtml")
        found = collection.cli("search", page.word, "--json").stdout
        assert snapshot["url"] in found, page.word
    # tabs were passed from page to page (two tab slots, eight pages), and every capture
    # above is right, those made in a kept tab included
    tabs = [json.loads((collection.root / snapshots[page.path]["output_dir"] / "chrome" / "navigation.json")
                       .read_text())["tab"] for page in wanted]
    assert tabs.count("kept") >= len(wanted) - 4, tabs
    # the page scrolled to its bottom made its lazy content appear; the tall page is captured whole
    lazy = collection.root / snapshots[specials["lazy"].path]["output_dir"]
    assert png_size(lazy / "screenshot" / "screenshot.png")[1] >= 5000
    # alerts were dismissed and recorded; the popup was recorded, and the popup blocker kept
    # window.open (no user gesture) from opening it: static-001.html was never requested
    navigation = json.loads((collection.root / snapshots[specials["popups"].path]["output_dir"] / "chrome" /
                             "navigation.json").read_text())
    assert [d["type"] for d in navigation["dialogs"]] == ["alert", "confirm"]
    assert navigation["popups"] == [{"url": server.base_url + "/static-001.html", "blocked": True}]
    assert popup_loads == 0
    # a 404 is a final failure of the page load, and of each capture, with the same reason
    missing = results_by_plugin(snapshots["/missing.html"])
    for plugin in ("chrome", "screenshot", "pdf", "dom", "mhtml"):
        assert (missing[plugin]["status"], missing[plugin]["output_str"]) == ("failed", "404 Not Found"), plugin

    # One browser served every snapshot, as a Process row that ended with the command.
    browsers = collection.query("SELECT status, reason, pwd FROM core_process WHERE kind='browser'")
    assert [(b["status"], b["reason"]) for b in browsers] == [("exited", "stopped with its worker")]
    assert chromium_processes(browser_profiles(collection)) == []
    # its endpoint was published in the crawl's folder the abx-plugins way
    [chrome_dir] = (collection.root / "crawls").glob("*/chrome")
    assert (chrome_dir / "cdp_url.txt").read_text().startswith("ws://127.0.0.1:")
    assert json.loads((chrome_dir / "browser.json").read_text())["ready"] is True


@needs_chrome
def test_hung_pages_do_not_block_the_others(tmp_path):
    site_root = tmp_path / "site"
    pages = mixed_pages(site_root, 4)
    specials = special_pages(site_root)
    collection = Collection(tmp_path / "data", plugins=BROWSER_PLUGINS,
                            extra_env={"CHROME_PAGELOAD_TIMEOUT": "4", "BROWSER_MAX_TABS": "3"}).init()
    with SiteServer(str(site_root)) as server:
        hard = [specials["forever"], specials["loop"]]
        collection.cli("add", *(server.base_url + p.path for p in [*hard, *pages]), timeout=240)
        snapshots = {s["url"].removeprefix(server.base_url): s for s in collection.list_json()}
    for page in [*hard, *pages]:
        results = results_by_plugin(snapshots[page.path])
        assert all(r["status"] == "succeeded" for r in results.values()), (page.path, results)
        assert snapshots[page.path]["title"] == page.title
    # the hung pages were captured as they were when their load timed out
    for page, stopped in ((specials["forever"], False), (specials["loop"], True)):
        folder = collection.root / snapshots[page.path]["output_dir"]
        navigation = json.loads((folder / "chrome" / "navigation.json").read_text())
        assert navigation["loaded"] == "timeout" and navigation["scripts_stopped"] is stopped
        assert page.word in (folder / "dom" / "output.html").read_text()
    # while they hung, the other pages went through the other tabs
    # (a page finished while a hung one was still loading)
    runs = {path: _chrome_run(collection, s["id"]) for path, s in snapshots.items()}
    assert any(runs[h.path][0] < runs[p.path][1] < runs[h.path][1] for h in hard for p in pages), runs


def _chrome_run(collection, snapshot_id):
    """When the chrome hook of a snapshot started and ended (its last attempt)."""
    [row] = collection.query("SELECT p.started_at, p.ended_at FROM core_process p JOIN core_archiveresult r "
                             "ON p.archiveresult_id = r.id WHERE r.plugin='chrome' AND r.snapshot_id=? "
                             "ORDER BY p.started_at DESC LIMIT 1", (uuid.UUID(snapshot_id).hex,))
    return row["started_at"], row["ended_at"]


def test_without_chromium_every_capture_is_skipped_with_the_reason(tmp_path):
    site_root = tmp_path / "site"
    [page] = mixed_pages(site_root, 1)
    collection = Collection(tmp_path / "data", plugins=BROWSER_PLUGINS,
                            extra_env={"CHROME_BINARY": "/nonexistent/chromium"}).init()
    with SiteServer(str(site_root)) as server:
        collection.cli("add", server.base_url + page.path, timeout=120)
        [snapshot] = collection.list_json()
    results = results_by_plugin(snapshot)
    reason = "chromium not installed (CHROME_BINARY=/nonexistent/chromium not found)"
    for plugin in ("chrome", "screenshot", "pdf", "dom", "mhtml"):
        assert (results[plugin]["status"], results[plugin]["output_str"]) == ("skipped", reason), plugin
    assert collection.query("SELECT id FROM core_process WHERE kind='browser'") == []


@needs_chrome
def test_choosing_one_capture_plugin_brings_in_the_page_load(tmp_path):
    site_root = tmp_path / "site"
    [page] = mixed_pages(site_root, 1)
    collection = Collection(tmp_path / "data", plugins="screenshot").init()
    with SiteServer(str(site_root)) as server:
        collection.cli("add", server.base_url + page.path, timeout=120)
        [snapshot] = collection.list_json()
    results = results_by_plugin(snapshot)
    assert {p: r["status"] for p, r in results.items()} == {"chrome": "succeeded", "screenshot": "succeeded"}
    navigation = json.loads((collection.root / snapshot["output_dir"] / "chrome" / "navigation.json").read_text())
    assert set(navigation["captures"]) == {"screenshot"}  # only what the chosen plugins ask for
