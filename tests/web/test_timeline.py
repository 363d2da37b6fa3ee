"""One URL over time: the timeline page lists every snapshot of a URL newest first, is linked
from the snapshot page, and diffs the text two snapshots extracted.

A real `archivebox server` archives a real page (served here over HTTP on 127.0.0.1) with
the built-in wget and htmltotext plugins, twice, with the page changed in between.
"""

from __future__ import annotations

import html
import http.server
import re
import threading
import urllib.parse

import pytest

from .webtools import Client, Server, web_collection


class Page(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):  # noqa: N802 - the handler's interface
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def page(lines: list[str]) -> bytes:
    paragraphs = "".join(f"<p>{line}</p>\n" for line in lines)
    return f"<!doctype html><html><head><title>Changing page</title></head><body>\n{paragraphs}</body></html>".encode()


@pytest.fixture(scope="module")
def origin():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/news"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def site(tmp_path_factory, origin):
    collection = web_collection(tmp_path_factory.mktemp("timeline") / "data", plugins="wget,htmltotext,titler")
    server = Server(collection)
    try:
        server.wait_healthy()
        Page.body = page(["Unchanged opening line", "The price is 10 euros", "Unchanged closing line"])
        collection.cli("add", origin, timeout=120)
        Page.body = page(["Unchanged opening line", "The price is 12 euros", "A brand new paragraph", "Unchanged closing line"])
        collection.cli("add", origin, timeout=120)
        collection.cli("add", origin + "?other", timeout=120)
        client = Client(server.url)
        client.login()
        yield collection, client
    finally:
        server.stop()


def snapshots_of(collection, url):
    return sorted((s for s in collection.list_json() if s["url"] == url), key=lambda s: s["created_at"], reverse=True)


def test_the_timeline_lists_every_snapshot_of_the_url_newest_first(site, origin):
    collection, client = site
    newest, oldest = snapshots_of(collection, origin)
    assert newest["status"] == oldest["status"] == "sealed"
    response = client.get("/timeline/?" + urllib.parse.urlencode({"url": origin}))
    assert response.status == 200
    listed = re.findall(r'data-snapshot="([0-9a-f-]+)"', response.text)
    assert listed == [newest["id"], oldest["id"]]  # not the snapshot of the other URL
    assert f'href="/snapshot/{newest["id"]}/"' in response.text
    assert "2 snapshots, newest first" in response.text


def test_the_snapshot_page_links_to_its_timeline(site, origin):
    collection, client = site
    [newest, _] = snapshots_of(collection, origin)
    detail = client.get(f"/snapshot/{newest['id']}/")
    link = html.unescape(re.search(r'id="timeline-link" href="([^"]+)"', detail.text).group(1))
    # By the snapshot's id, not its URL: a URL's credentials never go into a link (or a server log).
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(link).query) == {"snapshot": [newest["id"]]}
    listed = re.findall(r'data-snapshot="([0-9a-f-]+)"', client.get(link).text)
    assert listed == [s["id"] for s in snapshots_of(collection, origin)]
    other = snapshots_of(collection, origin + "?other")[0]
    other_link = html.unescape(re.search(r'id="timeline-link" href="([^"]+)"', client.get(f"/snapshot/{other['id']}/").text).group(1))
    assert re.findall(r'data-snapshot="([0-9a-f-]+)"', client.get(other_link).text) == [other["id"]]


def test_the_diff_shows_the_text_that_changed(site, origin):
    collection, client = site
    newest, oldest = snapshots_of(collection, origin)
    assert "The price is 10 euros" in (collection.root / oldest["output_dir"] / "htmltotext" / "htmltotext.txt").read_text()
    query = urllib.parse.urlencode({"url": origin, "a": newest["id"], "b": oldest["id"]})  # either order: older first
    response = client.get("/timeline/?" + query)
    assert response.status == 200
    diff = re.search(r'<div class="diff" id="diff">(.*?)</div>', response.text, re.S).group(1)
    lines = [(kind, html.unescape(text)) for kind, text in re.findall(r'<span class="(\w+)">(.*?)</span>', diff)]
    assert ("del", "-The price is 10 euros") in lines
    assert ("add", "+The price is 12 euros") in lines and ("add", "+A brand new paragraph") in lines
    assert ("same", " Unchanged opening line") in lines
    assert not any("Unchanged" in text for kind, text in lines if kind in ("add", "del"))
    same = client.get("/timeline/?" + urllib.parse.urlencode({"url": origin, "a": oldest["id"], "b": oldest["id"]}))
    assert 'id="diff-same"' in same.text


def test_bad_timeline_requests(site, origin):
    collection, client = site
    other = snapshots_of(collection, origin + "?other")[0]
    assert client.get("/timeline/").status == 404
    assert client.get("/timeline/?url=https%3A%2F%2Fnever.example%2F").status == 404
    assert client.get("/timeline/?" + urllib.parse.urlencode({"url": origin, "a": "nope", "b": other["id"]})).status == 404
    assert client.get("/timeline/?" + urllib.parse.urlencode({"url": origin, "a": other["id"], "b": other["id"]})).status == 404
    anonymous = Client(client.base_url).get("/timeline/?" + urllib.parse.urlencode({"url": origin}))
    assert anonymous.status == 302 and "/admin/login/" in anonymous.location
