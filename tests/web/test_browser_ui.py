"""The web UI in a real headless Chromium at 1280x800: searching, tag chips, deleting with a
confirmation, a crawl page that follows its rows, logging out, the favicon, the API docs
offline, and admin lists that fit the window.

Screenshots are kept in ``$TMPDIR/archivebox-web-artifacts/`` for a person to look at.
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse

import pytest
from playwright.sync_api import expect, sync_playwright

from .test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS
from .webtools import PASSWORD, Server, web_collection

URLS = ["https://example.com/alpha", "https://example.com/beta"]
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    collection = web_collection(tmp_path_factory.mktemp("ui") / "data", plugins="noop,titler,pagesaver,sleepy",
                                extra_env={"SLEEPY_SECONDS": "3"})
    server = Server(collection)
    try:
        server.wait_healthy()
        collection.cli("add", "--tag", "first", *URLS, timeout=180)
        collection.cli("schedule", "--add", "--every=daily", "https://me:pw@example.com/a/long/path/for/the/schedule/list.html")
        yield collection, server
    finally:
        server.stop()


@contextlib.contextmanager
def logged_in(site):
    """A page of a fresh Chromium, logged in. (Playwright runs an event loop while it is
    open: it is closed before the test ends, when the suite's fixtures use the database.)"""
    _, server = site
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(20_000)
            page.goto(server.url + "/admin/login/")
            page.fill("#id_username", "admin")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            expect(page).to_have_url(server.url + "/admin/")
            yield page
        finally:
            browser.close()


def test_search_modes_and_tag_chips(site):
    _, server = site
    with logged_in(site) as page:
        page.goto(server.url + "/")
        page.fill("#search-form input[name=q]", "beta")
        page.select_option("#search-form select[name=query_type]", "url")
        page.click("#search-form button[type=submit]")
        expect(page.locator("#snapshots tbody tr")).to_have_count(1)
        expect(page.locator("#snapshots tbody tr").first).to_contain_text(URLS[1])
        page.fill("#search-form input[name=q]", "nothing-like-this")
        page.click("#search-form button[type=submit]")
        expect(page.locator("#empty")).to_contain_text("No snapshot matches “nothing-like-this” (in URL)")
        page.goto(server.url + "/")
        page.locator("#snapshots a.tag", has_text="first").first.click()
        expect(page).to_have_url(re.compile(r"/\?tag=first$"))
        expect(page.locator("#snapshots tbody tr")).to_have_count(2)
        expect(page.locator("#result-count")).to_contain_text("tagged")
        page.screenshot(path=str(ARTIFACTS / "index-tag.png"))


def test_delete_from_the_snapshot_page_after_a_confirmation(site):
    collection, server = site
    collection.cli("add", "https://example.com/doomed", timeout=120)
    doomed = next(s for s in collection.list_json() if s["url"] == "https://example.com/doomed")
    with logged_in(site) as page:
        page.goto(f"{server.url}/snapshot/{doomed['id']}/")
        page.click("#delete")
        expect(page.locator("h1")).to_have_text("Delete this snapshot?")
        page.screenshot(path=str(ARTIFACTS / "delete-confirmation.png"))
        page.click("#confirm-delete")
        expect(page).to_have_url(server.url + "/")
        expect(page.locator("#messages")).to_contain_text("Deleted the snapshot of https://example.com/doomed")
        expect(page.locator("#snapshots")).not_to_contain_text("https://example.com/doomed")
        assert "https://example.com/doomed" not in {s["url"] for s in collection.list_json()}


def test_the_crawl_page_follows_its_snapshots_without_reloading(site):
    collection, server = site
    with logged_in(site) as page:
        page.goto(server.url + "/add/")
        page.fill("#id_urls", "https://example.com/progress-1\nhttps://example.com/progress-2")
        page.click("#add-form button[type=submit]")
        expect(page).to_have_url(re.compile(r"/crawl/[0-9a-f-]+/$"))
        rows = page.locator("#crawl-snapshot-list tr[data-snapshot]")
        expect(rows).to_have_count(2, timeout=30_000)  # the page reloads once to list them
        page.evaluate("window.stillTheSamePage = true")
        # Each snapshot takes 3 s (sleepy): its row changes while the page stays.
        expect(page.locator("#crawl-snapshot-list .status.sealed")).to_have_count(2, timeout=60_000)
        assert page.evaluate("window.stillTheSamePage") is True, "the rows were updated by a reload, not in place"
        expect(page.locator("#crawl-status")).to_have_text("sealed", timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "crawl-progress.png"))


def test_logout_link_favicon_and_api_docs_offline(site):
    _, server = site
    with logged_in(site) as page:
        reached = []

        def only_here(route):
            host = urllib.parse.urlsplit(route.request.url).hostname
            if host != "127.0.0.1":
                reached.append(route.request.url)
                route.abort()
            else:
                route.continue_()

        page.route("**/*", only_here)
        page.goto(server.url + "/api/v1/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("ArchiveBox API", timeout=30_000)
        expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
        assert reached == [], f"the API docs asked another host: {reached}"
        page.screenshot(path=str(ARTIFACTS / "api-docs.png"))
        icon = page.request.get(server.url + "/favicon.ico")  # what a browser asks every site for
        assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml") and b"<svg" in icon.body(), icon.headers
        page.goto(server.url + "/")
        declared = page.locator("link[rel=icon]").get_attribute("href")
        assert page.request.get(server.url + declared).ok
        page.goto(server.url + "/")
        page.click("#logout")
        page.goto(server.url + "/")
        expect(page).to_have_url(re.compile(r"/admin/login/\?next=/$"))


@pytest.mark.parametrize("path", ["/admin/core/snapshot/", "/admin/core/archiveresult/", "/admin/core/crawl/", "/admin/core/process/",
                                  "/admin/core/schedule/", "/admin/huey_monitor/taskmodel/", "/admin/core/tag/"])
def test_admin_lists_fit_a_1280_px_window(site, path):
    """Regression: columns were cut at 1280 px (the list scrolled sideways inside its box)."""
    _, server = site
    with logged_in(site) as page:
        page.goto(server.url + path)
        expect(page.locator("#result_list tbody tr").first).to_be_visible()
        table, box = page.evaluate("(() => { const t = document.querySelector('#result_list');"
                                   " return [t.getBoundingClientRect().width, (t.closest('.results') || t.parentElement).clientWidth]; })()")
        page.screenshot(path=str(ARTIFACTS / f"admin{path.replace('/', '_')}.png"))
        assert table <= box + 1, f"{path}: the list is {table:.0f} px wide in a box of {box} px"
