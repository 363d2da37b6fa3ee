"""The chrome hook on its own (it launches Chromium itself when no CHROME_CDP_URL is given)
and the capture hooks that file its captures (screenshot, pdf, dom, mhtml, title)."""
import json
import os
import shutil
import signal
import threading
import time

import psutil
import pytest

from plugintools import wait_until
from localsite import closed_port

CHROME = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
needs_chrome = pytest.mark.skipif(CHROME is None, reason="chromium is not installed")
CAPTURE_PLUGINS = ("screenshot", "pdf", "dom", "mhtml")


def _chrome_procs(marker):
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmdline = proc.info.get("cmdline") or []
        except psutil.Error:
            continue
        if any(marker in part for part in cmdline):
            found.append(proc)
    return found


@pytest.fixture
def chrome_tmp():
    """A private, short TMPDIR: the Chromium the hook launches keeps its profile there, so
    leftovers can be found."""
    import tempfile
    path = tempfile.mkdtemp(prefix="abxt-", dir="/tmp")
    yield path
    for proc in _chrome_procs(path):
        proc.kill()
    shutil.rmtree(path, ignore_errors=True)


def _assert_clean(chrome_tmp):
    wait_until(lambda: not _chrome_procs(chrome_tmp), timeout=10, message="chromium processes to exit")


@needs_chrome
def test_one_load_many_captures(tmp_path, snapshot_factory, chrome_tmp):
    from localsite import SiteServer
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "js.html").write_text(
        "<html><head><title>Loading\u2026</title></head><body><p id=p>static</p>"
        "<script>setTimeout(() => { document.title = 'After Script';"
        " document.getElementById('p').textContent = 'dynamicword'; console.log('logged line'); }, 30);"
        "</script></body></html>")
    with SiteServer(str(tmp_path / "site")) as server:
        snap = snapshot_factory(server.base_url + "/js.html")
        env = {"TMPDIR": chrome_tmp, "CHROME_RESOLUTION": "800,600", "SCREENSHOT_FULL_PAGE": "false"}
        run = snap.run("chrome", env=env)
        assert run.returncode == 0 and run.status == "succeeded", run
        assert len([r for r in server.requests if r.path == "/js.html"]) == 1  # one page load for all
        visit = run.result["output_json"]
        assert visit["status"] == 200 and set(visit["captures"]) == {"title", "dom", "mhtml", "screenshot", "pdf"}
        shot = snap.run("screenshot")
        assert shot.status == "succeeded" and shot.result["output_json"]["width"] == 800
        assert shot.result["output_json"]["height"] == 600
        assert open(snap.run("pdf").path("output.pdf"), "rb").read(5) == b"%PDF-"
        assert "dynamicword" in open(snap.run("dom").path("output.html"), encoding="utf-8").read()
        assert b"dynamicword" in open(snap.run("mhtml").path("page.mhtml"), "rb").read()
        title = snap.run("title")
        assert title.result["output_str"] == "After Script" and title.result["output_json"]["source"] == "chrome"
        text = snap.run("htmltotext")
        assert "dynamicword" in open(text.path("htmltotext.txt")).read()
        navigation = json.load(open(run.path("navigation.json")))
        assert {"type": "log", "text": "logged line"} in navigation["console"]
    _assert_clean(chrome_tmp)


@needs_chrome
def test_connection_refused_is_transient(snapshot_factory, chrome_tmp):
    snap = snapshot_factory(f"http://127.0.0.1:{closed_port()}/")
    run = snap.run("chrome", env={"TMPDIR": chrome_tmp})
    assert run.returncode != 0, run
    assert "ERR_CONNECTION_REFUSED" in run.stderr
    for plugin in CAPTURE_PLUGINS:  # once its retries are spent, the captures say why
        capture = snap.run(plugin)
        assert capture.status == "failed" and "ERR_CONNECTION_REFUSED" in capture.result["output_str"], capture
    _assert_clean(chrome_tmp)


@needs_chrome
def test_http_error_is_failed_without_captures(site, snapshot_factory, chrome_tmp):
    snap = snapshot_factory(site.url(site.info.missing_path))
    run = snap.run("chrome", env={"TMPDIR": chrome_tmp})
    assert run.returncode == 0 and run.status == "failed" and run.result["output_str"] == "404 Not Found", run
    shot = snap.run("screenshot")
    assert shot.status == "failed" and shot.result["output_str"] == "404 Not Found"
    _assert_clean(chrome_tmp)


@needs_chrome
def test_a_pdf_url_is_no_page_to_capture(tmp_path, snapshot_factory, chrome_tmp):
    """Regression: a URL that is a PDF got a black screenshot, a print of the PDF viewer and its
    DOM as captures; the browser shows a PDF in a viewer, so they are skipped, saying why."""
    from localsite import SiteServer, pdf_bytes
    (tmp_path / "report.pdf").write_bytes(pdf_bytes("A report", "Some text"))
    with SiteServer(str(tmp_path)) as server:
        snap = snapshot_factory(server.base_url + "/report.pdf")
        run = snap.run("chrome", env={"TMPDIR": chrome_tmp})
        assert run.returncode == 0 and run.status == "succeeded", run
        for plugin in CAPTURE_PLUGINS:
            capture = snap.run(plugin)
            assert capture.status == "skipped", capture
            assert capture.result["output_str"].startswith("the URL is a PDF (application/pdf)"), capture
    _assert_clean(chrome_tmp)


@pytest.mark.parametrize("plugin", CAPTURE_PLUGINS)
def test_missing_binary_is_skipped(plugin, site, snapshot_factory):
    snap = snapshot_factory(site.url("/page-01.html"))
    run = snap.run("chrome", env={"CHROME_BINARY": "/nonexistent/chromium"})
    assert run.returncode == 0 and run.status == "skipped", run
    assert run.result["output_str"] == "chromium not installed (CHROME_BINARY=/nonexistent/chromium not found)"
    capture = snap.run(plugin)
    assert capture.status == "skipped" and capture.result["output_str"] == run.result["output_str"]


def test_chrome_disabled_skips_the_captures(site, snapshot_factory):
    snap = snapshot_factory(site.url("/page-01.html"))
    assert snap.run("chrome", env={"CHROME_ENABLED": "false"}).status == "skipped"
    capture = snap.run("screenshot", env={"CHROME_ENABLED": "false"})
    assert capture.status == "skipped" and "CHROME_ENABLED=false" in capture.result["output_str"]


def test_capture_disabled_is_not_made(site, snapshot_factory, chrome_tmp):
    if CHROME is None:
        pytest.skip("chromium is not installed")
    snap = snapshot_factory(site.url("/page-02.html"))
    run = snap.run("chrome", env={"TMPDIR": chrome_tmp, "PDF_ENABLED": "false", "MHTML_ENABLED": "false",
                                  "SCREENSHOT_ENABLED": "false"})
    assert run.status == "succeeded" and set(run.result["output_json"]["captures"]) == {"title", "dom"}
    assert not os.path.exists(run.path("output.pdf"))


@needs_chrome
def test_cookies_file_reaches_the_page(tmp_path, snapshot_factory, chrome_tmp):
    """A persona's COOKIES_FILE is loaded into the page's browser context."""
    from localsite import SiteServer
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "c.html").write_text(
        "<html><head><title>x</title></head><body><script>document.title = document.cookie || 'none';</script></body></html>")
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tsecret123\n")
    with SiteServer(str(tmp_path / "site")) as server:
        snap = snapshot_factory(server.base_url + "/c.html")
        run = snap.run("chrome", env={"TMPDIR": chrome_tmp, "COOKIES_FILE": str(cookies)})
        assert run.status == "succeeded", run
        assert open(run.path("title.txt")).read().strip() == "session=secret123"
    _assert_clean(chrome_tmp)


def test_a_capture_that_fails_once_is_tried_again(tmp_path, monkeypatch):
    """Chromium's printing fails now and then on a busy machine ("Printing failed"): the
    capture is tried once more. (A printing failure cannot be caused on demand, so the tab
    is a stand-in with the method names of browser.Tab.)"""
    import asyncio

    from archivebox.pluginkit import browser

    class FlakyTab:
        calls = 0

        async def pdf(self):
            FlakyTab.calls += 1
            if FlakyTab.calls == 1:
                raise browser.CDPError("Page.printToPDF: Printing failed")
            return b"%PDF-1.4 fake"

    monkeypatch.chdir(tmp_path)
    visit = browser.Visit("http://127.0.0.1/")
    asyncio.run(browser.save_capture("pdf", FlakyTab(), visit, time.monotonic() + 30))
    saved = visit.info["captures"]["pdf"]
    assert FlakyTab.calls == 2 and (saved["file"], saved["bytes"]) == ("output.pdf", 13) and saved["ms"] >= 0
    # one that keeps failing is reported with its error
    class BrokenTab:
        async def pdf(self):
            raise browser.CDPError("Page.printToPDF: Printing failed")

    visit = browser.Visit("http://127.0.0.1/")
    asyncio.run(browser.save_capture("pdf", BrokenTab(), visit, time.monotonic() + 30))
    assert visit.info["captures"]["pdf"]["error"].endswith("Printing failed")


@needs_chrome
def test_a_renderer_that_goes_away_mid_load_is_replaced_by_a_new_tab(tmp_path, snapshot_factory, chrome_tmp):
    """Chromium ends a tab's renderer now and then on a busy machine (and a page can crash
    its own): the hook loads the page again in a new tab instead of failing. Here every
    renderer of the hook's browser is SIGKILLed once, while the page's slow image loads."""
    from localsite import SiteServer
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "slow.html").write_text(
        "<html><head><title>Slow page</title></head><body><p>slowpageword</p><img src='/slowimg?delay=2'></body></html>")
    killed = []

    def kill_renderers_once(server):
        # the renderer has parsed the page and asked for its image, which takes 2 s to
        # come: the page is mid-load
        wait_until(lambda: any(r.path.startswith("/slowimg") for r in server.requests), timeout=30,
                   message="the page's slow image to be requested")
        for proc in _chrome_procs(chrome_tmp):
            if "--type=renderer" in proc.cmdline():
                proc.send_signal(signal.SIGKILL)
                killed.append(proc.pid)

    with SiteServer(str(tmp_path / "site")) as server:
        snap = snapshot_factory(server.base_url + "/slow.html")
        killer = threading.Thread(target=kill_renderers_once, args=(server,))
        killer.start()
        run = snap.run("chrome", env={"TMPDIR": chrome_tmp})
        killer.join()
        assert killed, "no renderer was found to kill"
        assert run.returncode == 0 and run.status == "succeeded", run
        navigation = json.load(open(run.path("navigation.json")))
        assert navigation["renderer_lost"] == 1 and navigation["loaded"] == "load"
        assert "renderer went away" in run.stderr and "try 2 of 3" in run.stderr
        assert len([r for r in server.requests if r.path == "/slow.html"]) == 2
        assert "slowpageword" in open(run.path("output.html")).read()
    _assert_clean(chrome_tmp)


@pytest.fixture
def shared_chrome(tmp_path):
    """A Chromium of its own (started as the hook starts one), for hook runs given its
    endpoint and a tab slot's file (CHROME_TAB_FILE): ``(cdp_url, http_url, tab_file)``."""
    import asyncio
    from archivebox.pluginkit import browser
    launched = browser.Launched(CHROME)
    try:
        cdp_url = asyncio.run(launched.endpoint())
        http = "http://" + cdp_url.removeprefix("ws://").split("/", 1)[0]
        yield cdp_url, http, str(tmp_path / "tabs" / "0.json")
    finally:
        launched.stop()


def _page_targets(http):
    import urllib.request
    return {t["id"]: t["url"] for t in json.load(urllib.request.urlopen(f"{http}/json/list", timeout=5)) if t["type"] == "page"}


@needs_chrome
def test_a_clean_visit_passes_its_tab_to_the_next_page_of_the_same_crawl(tmp_path, snapshot_factory, shared_chrome):
    """Opening and closing a tab costs Chromium more than a simple page: after a clean visit
    the hook leaves its tab (on about:blank) for the next run holding its tab slot. Pages of
    the same crawl load in it and share its cookies; the first page of another crawl gets a
    new context, and the old one is disposed of."""
    from localsite import SiteServer
    cdp_url, http, tab_file = shared_chrome
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "set.html").write_text(
        "<html><head><title>x</title></head><body><script>document.cookie = 'seen=yes'; document.title = 'set';"
        "</script></body></html>")
    (tmp_path / "site" / "get.html").write_text(
        "<html><head><title>x</title></head><body><script>document.title = document.cookie || 'none';</script>"
        "</body></html>")
    env = {"CHROME_CDP_URL": cdp_url, "CHROME_TAB_FILE": tab_file, "CHROME_RESOLUTION": "800,600"}
    with SiteServer(str(tmp_path / "site")) as server:
        first = snapshot_factory(server.base_url + "/set.html").run("chrome", env=env)
        assert first.status == "succeeded", first
        kept = json.load(open(tab_file))
        assert json.load(open(first.path("navigation.json")))["tab"] == "new"
        assert _page_targets(http).get(kept["target"]) == "about:blank"
        assert not os.path.exists(first.path("target_id.txt"))  # the engine would close a tab named there

        second = snapshot_factory(server.base_url + "/get.html").run("chrome", env=env)
        assert second.status == "succeeded", second
        assert json.load(open(second.path("navigation.json")))["tab"] == "kept"
        assert json.load(open(tab_file)) == kept
        assert open(second.path("title.txt")).read().strip() == "seen=yes"  # one crawl: one cookie jar

        other = snapshot_factory(server.base_url + "/get.html").run(
            "chrome", env={**env, "CRAWL_DIR": str(tmp_path / "data" / "crawls" / "another")})
        assert other.status == "succeeded", other
        assert json.load(open(other.path("navigation.json")))["tab"] == "new"
        assert open(other.path("title.txt")).read().strip() == "none"  # never shared between crawls
        now = json.load(open(tab_file))
        assert now["target"] != kept["target"] and now["context"] != kept["context"]
        assert kept["target"] not in _page_targets(http)  # the other crawl's context went with its tab
        assert set(_page_targets(http)) >= {now["target"]}


@needs_chrome
def test_a_visit_that_is_not_clean_does_not_pass_its_tab_on(tmp_path, snapshot_factory, shared_chrome):
    """A page whose script had to be stopped leaves scripts disabled in its tab: the tab is
    closed with its context and the slot's file removed; the next run opens a new one."""
    from localsite import SiteServer
    cdp_url, http, tab_file = shared_chrome
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ok.html").write_text("<html><head><title>Fine</title></head><body>fine</body></html>")
    (tmp_path / "site" / "loop.html").write_text(
        "<html><head><title>Loop</title></head><body><p>loopword</p><script>while (true) {}</script></body></html>")
    env = {"CHROME_CDP_URL": cdp_url, "CHROME_TAB_FILE": tab_file, "CHROME_RESOLUTION": "800,600",
           "CHROME_PAGELOAD_TIMEOUT": "3"}
    with SiteServer(str(tmp_path / "site")) as server:
        assert snapshot_factory(server.base_url + "/ok.html").run("chrome", env=env).status == "succeeded"
        kept = json.load(open(tab_file))
        looped = snapshot_factory(server.base_url + "/loop.html").run("chrome", env=env)
        navigation = json.load(open(looped.path("navigation.json")))
        assert navigation["tab"] == "kept" and navigation["scripts_stopped"] is True
        assert not os.path.exists(tab_file)
        wait_until(lambda: kept["target"] not in _page_targets(http), timeout=10, message="the tab to close")
        after = snapshot_factory(server.base_url + "/ok.html").run("chrome", env=env)
        assert after.status == "succeeded" and json.load(open(after.path("navigation.json")))["tab"] == "new"
        assert open(after.path("title.txt")).read().strip() == "Fine"


@needs_chrome
def test_a_kept_tab_that_is_gone_is_replaced(tmp_path, snapshot_factory, shared_chrome):
    """A hook killed mid-visit leaves its tab for the engine to close (target_id.txt); the
    slot's next run finds the tab named in the slot's file gone and opens a new one."""
    import urllib.request
    from localsite import SiteServer
    cdp_url, http, tab_file = shared_chrome
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ok.html").write_text("<html><head><title>Fine</title></head><body>fine</body></html>")
    env = {"CHROME_CDP_URL": cdp_url, "CHROME_TAB_FILE": tab_file, "CHROME_RESOLUTION": "800,600"}
    with SiteServer(str(tmp_path / "site")) as server:
        assert snapshot_factory(server.base_url + "/ok.html").run("chrome", env=env).status == "succeeded"
        kept = json.load(open(tab_file))
        urllib.request.urlopen(f"{http}/json/close/{kept['target']}", timeout=5)  # as the engine closes a left tab
        wait_until(lambda: kept["target"] not in _page_targets(http), timeout=10, message="the tab to close")
        again = snapshot_factory(server.base_url + "/ok.html").run("chrome", env=env)
        assert again.status == "succeeded", again
        assert json.load(open(again.path("navigation.json")))["tab"] == "new"
        assert "the kept tab is gone" in again.stderr
        assert json.load(open(tab_file))["target"] in _page_targets(http)
