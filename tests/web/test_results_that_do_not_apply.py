"""Results that do not apply are not failures, and a page's HTTP error is said once.

A local site serves a page without an icon (and no ``/favicon.ico``), a PDF with a title in
its metadata, an RSS feed, and a missing page (404). A real server archives them with the
built-in headers, wget, favicon and title plugins.

Regressions: a page without a declared icon and a PDF or a feed given to ``title`` showed red
"failed" badges on healthy pages; a PDF URL was shown in a sandboxed frame that blocks the
browser's PDF viewer; a 404 page was a column of red failures, each saying "404 Not Found".
"""

from __future__ import annotations

import html
import re

import pytest
from localsite import pdf_bytes, serve_site

from .webtools import Client, Server, web_collection

FEED = """<?xml version="1.0"?><rss version="2.0"><channel><title>Potash &amp; Co. News</title>
<link>http://127.0.0.1/</link><description>d</description></channel></rss>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    (root / "page.html").write_text("<!doctype html><html><head><title>A plain page</title></head><body><p>Plain.</p></body></html>")
    (root / "report.pdf").write_bytes(pdf_bytes("Annual Potash Report 2023", "Potash output in 2023"))
    (root / "feed.rss").write_text(FEED)
    with serve_site(root) as base:
        collection = web_collection(tmp_path_factory.mktemp("apply") / "data", plugins="headers,wget,favicon,title")
        server = Server(collection)
        try:
            server.wait_healthy()
            names = ("page.html", "report.pdf", "feed.rss", "missing.html")
            collection.cli("add", *(f"{base}/{name}" for name in names), timeout=180)
            snapshots = {s["url"].rsplit("/", 1)[1]: s for s in collection.list_json()}
            client = Client(server.url)
            client.login()
            yield collection, client, snapshots
        finally:
            server.stop()


def statuses(snapshot) -> dict:
    return {r["plugin"]: (r["status"], r["output_str"]) for r in snapshot["results"]}


def test_a_page_without_an_icon_has_no_failure(site):
    _, client, snapshots = site
    results = statuses(snapshots["page.html"])
    assert results["favicon"][0] == "noresults" and results["favicon"][1].startswith("no icon: the page declares none"), results
    assert {status for status, _ in results.values()} == {"succeeded", "noresults"}
    row = re.search(rf'href="/snapshot/{snapshots["page.html"]["id"]}/".*?</tr>', client.get("/").text, re.S).group(0)
    assert "failed" not in row
    detail = client.get(f"/snapshot/{snapshots['page.html']['id']}/").text
    assert 'class="status failed"' not in detail and 'class="status noresults">noresults</span>' in detail


def test_a_pdf_has_its_metadata_title_and_is_shown_as_a_pdf(site):
    _, client, snapshots = site
    snapshot = snapshots["report.pdf"]
    assert snapshot["title"] == "Annual Potash Report 2023"
    assert statuses(snapshot)["title"] == ("succeeded", "Annual Potash Report 2023")
    detail = client.get(f"/snapshot/{snapshot['id']}/").text
    frame = re.search(r'<iframe class="preview pdf-frame main"[^>]*>', detail).group(0)
    assert "sandbox" not in frame  # the browser's PDF viewer does not run in a sandboxed frame
    src = html.unescape(re.search(r'src="([^"]+)"', frame).group(1))
    served = client.get(src)
    assert served.status == 200 and served.headers["content-type"] == "application/pdf" and served.body.startswith(b"%PDF-")
    assert "sandbox" not in served.headers["content-security-policy"]
    assert 'id="capture-frame"' not in detail  # nothing else to show in the sandboxed frame


def test_a_feed_has_its_own_title(site):
    _, _, snapshots = site
    assert snapshots["feed.rss"]["title"] == "Potash & Co. News"
    assert statuses(snapshots["feed.rss"])["title"][0] == "succeeded"


def test_a_404_page_says_so_once_at_the_top(site):
    _, client, snapshots = site
    snapshot = snapshots["missing.html"]
    results = statuses(snapshot)
    assert results["headers"] == ("failed", "404 Not Found")  # still failed: `update` retries them
    detail = client.get(f"/snapshot/{snapshot['id']}/").text
    assert detail.count("The page answered <strong>404 Not Found</strong>") == 1
    table = re.search(r'<table id="results">.*?</table>', detail, re.S).group(0)
    assert 'class="status failed"' not in table
    answered = [plugin for plugin, (status, text) in results.items() if status == "failed" and text == "404 Not Found"]
    assert len(answered) >= 3 and table.count("the page's answer (above)") == len(answered)
    row = re.search(rf'href="/snapshot/{snapshot["id"]}/".*?</tr>', client.get("/").text, re.S).group(0)
    assert 'class="status http-error"' in row and "404 Not Found" in row and "failed</span>" not in row
