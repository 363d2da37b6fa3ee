"""A real headless Chromium (Debian's ``chromium``, driven by Playwright) logs in and reads the pages.

Screenshots are kept in ``$TMPDIR/archivebox-web-artifacts/`` for a person to look at.
"""

from __future__ import annotations

import http.server
import re
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from .webtools import PASSWORD, Server, web_collection

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(tempfile.gettempdir()) / "archivebox-web-artifacts"
URL = "https://example.com/browser-test"


def test_login_snapshot_list_and_snapshot_page_in_chromium(tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    collection = web_collection(tmp_path / "data")
    server = Server(collection)
    try:
        server.wait_healthy()
        collection.cli("add", URL)
        [snapshot] = collection.list_json()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(20_000)

                page.goto(server.url + "/")
                expect(page).to_have_url(re.compile(r"/admin/login/\?next=/$"))
                page.fill("#id_username", "admin")
                page.fill("#id_password", PASSWORD)
                page.click("input[type=submit]")
                expect(page).to_have_url(server.url + "/")

                rows = page.locator("#snapshots tbody tr")
                expect(rows).to_have_count(1)
                expect(rows.first).to_contain_text(URL)
                expect(rows.first).to_contain_text("sealed")
                expect(rows.first.locator(".tag")).to_have_text("titled")
                page.screenshot(path=str(ARTIFACTS / "snapshot-list.png"), full_page=True)

                page.click(f"#snapshots a:has-text('{URL}')")
                expect(page).to_have_url(f"{server.url}/snapshot/{snapshot['id']}/")
                expect(page.locator("#snapshot-url")).to_have_text(URL)
                expect(page.locator("#snapshot-title")).to_have_text(f"Title of {URL}")
                outputs = page.locator("#outputs")
                for name in ("pagesaver/page.html", "pagesaver/notes.txt", "pagesaver/sub/data.json", "index.json"):
                    expect(outputs).to_contain_text(name)
                expect(page.locator("#results")).to_contain_text("on_Snapshot__30_pagesaver.py")

                preview = page.frame_locator("iframe.preview")
                expect(preview.locator("#saved")).to_have_text(f"Saved copy of {URL}")
                expect(preview.locator("#cookie")).to_contain_text("cookie: blocked")
                expect(preview.locator("#fetch")).not_to_have_text("fetch: pending")
                expect(preview.locator("#fetch")).not_to_contain_text("logged-in")
                expect(preview.locator("#pic")).to_have_js_property("naturalWidth", 4)  # the page's own files load
                page.screenshot(path=str(ARTIFACTS / "snapshot-page.png"), full_page=True)

                # Opened on its own, the archived page is framed in a sandbox: an opaque origin, no cookies.
                page.goto(f"{server.url}/archive/{snapshot['id']}/pagesaver/page.html")
                alone = page.frame_locator("iframe")
                expect(alone.locator("#cookie")).to_contain_text("cookie: blocked")
                expect(alone.locator("#fetch")).not_to_have_text("fetch: pending")
                expect(alone.locator("#fetch")).not_to_contain_text("logged-in")
                assert page.frames[1].evaluate("window.origin") == "null"
                expect(alone.locator("#pic")).to_have_js_property("naturalWidth", 4)

                page.goto(server.url + "/admin/core/snapshot/")
                expect(page.locator("#result_list")).to_contain_text(URL)
                expect(page.locator("#result_list")).to_contain_text("sealed")
                page.screenshot(path=str(ARTIFACTS / "admin-snapshots.png"), full_page=True)

                page.goto(server.url + "/admin/core/process/?kind__exact=hook&q=pagesaver")
                page.click("#result_list tbody tr th a")
                expect(page.locator("pre.abx-cmd")).to_contain_text("on_Snapshot__30_pagesaver.py")
                expect(page.locator("pre.abx-log").last).to_contain_text("END-OF-STDERR-MARKER")
                page.screenshot(path=str(ARTIFACTS / "admin-process.png"), full_page=False)
            finally:
                browser.close()
    finally:
        server.stop()


class Recorder:
    """Another origin on 127.0.0.1: records the request line of anything that reaches it
    (any method, websocket upgrades included) and answers 204."""

    def __init__(self):
        self.seen: list[str] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def parse_request(self):
                ok = super().parse_request()
                recorder.seen.append(self.requestline)
                if ok:
                    self.send_response(204)
                    self.end_headers()
                return False  # answered: nothing more to do with this request

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_an_archived_page_cannot_phone_home_nor_navigate_the_top_window(tmp_path):
    """Opened on the snapshot page or on its own, a saved page's beacon, fetch, image,
    websocket and top-window navigation to another origin all fail: that origin sees nothing."""
    with Recorder() as outside:
        collection = web_collection(tmp_path / "data", plugins="phonehome", extra_env={"PHONEHOME_URL": outside.url})
        server = Server(collection)
        try:
            server.wait_healthy()
            collection.cli("add", "https://example.com/hostile")
            [snapshot] = collection.list_json()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                try:
                    page = browser.new_page()
                    page.set_default_timeout(20_000)
                    page.goto(server.url + "/admin/login/")
                    page.fill("#id_username", "admin")
                    page.fill("#id_password", PASSWORD)
                    page.click("input[type=submit]")
                    archived = f"{server.url}/archive/{snapshot['id']}/phonehome/phone.html"
                    page.goto(archived)
                    # Opened on its own, it is framed in a sandbox, and the top window stays here.
                    frame = page.frame_locator("iframe")
                    expect(frame.locator("#state")).to_have_text("tried")
                    page.wait_for_timeout(500)  # give any escaped request time to arrive
                    assert page.url.startswith(server.url + "/archive/")
                    assert outside.seen == [], outside.seen
                finally:
                    browser.close()
        finally:
            server.stop()
