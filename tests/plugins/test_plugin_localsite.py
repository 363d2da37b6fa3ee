"""The reusable test site (tests/localsite.py) is what it claims to be."""
import os
import threading
import time
import urllib.request
import xml.etree.ElementTree as ET
import zlib

import pytest

from localsite import GIF_BYTES, generate_site, png_bytes, serve_site


def _get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type"), err.read()


def test_generated_site_contents(site):
    info = site.info
    assert len(info.pages) == 20
    assert len({p.title for p in info.pages}) == 20
    words = [p.word for p in info.pages]
    assert len(set(words)) == 20
    for page in info.pages:
        html = open(page.file, encoding="utf-8").read()
        assert page.word in html
        others = [w for w in words if w != page.word]
        assert not any(w in html for w in others)
        assert len(page.links) >= 4
    for rel in [info.css_path, info.background_path, info.favicon_path, info.favicon_ico_path, *info.image_paths]:
        assert os.path.isfile(os.path.join(info.root, rel.lstrip("/"))), rel


def test_png_and_gif_bytes_are_valid():
    data = png_bytes(3, 2, (1, 2, 3))
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    pos, chunks = 8, []
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        crc = int.from_bytes(data[pos + 8 + length:pos + 12 + length], "big")
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        chunks.append((kind, body))
        pos += 12 + length
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert zlib.decompress(chunks[1][1]) == (b"\x00" + bytes((1, 2, 3)) * 3) * 2
    assert GIF_BYTES.startswith(b"GIF89a") and GIF_BYTES.endswith(b";")


def test_server_responses(site):
    status, ctype, body = _get(site.url("/page-01.html"))
    assert status == 200 and ctype.startswith("text/html") and site.info.pages[0].word.encode() in body
    assert _get(site.url(site.info.missing_path))[0] == 404
    assert _get(site.url("/../../etc/passwd"))[0] == 404
    assert _get(site.url("/status/418"))[0] == 418
    status, ctype, body = _get(site.url(site.info.urls_txt_path))
    assert ctype.startswith("text/plain")
    for link in site.info.urls_txt_links:
        assert link.encode() in body
    rss = ET.fromstring(_get(site.url(site.info.rss_path))[2])
    assert [i.findtext("link") for i in rss.iter("item")] == site.info.rss_links
    atom = ET.fromstring(_get(site.url(site.info.atom_path))[2])
    ns = "{http://www.w3.org/2005/Atom}"
    assert len(list(atom.iter(ns + "entry"))) == len(site.info.atom_links)
    assert site.server.requests[-1].path == site.info.atom_path


def test_server_is_threaded(site):
    slow = threading.Thread(target=_get, args=(site.url("/slow?delay=1.5"),), daemon=True)
    slow.start()
    started = time.monotonic()
    assert _get(site.url("/index.html"))[0] == 200
    assert time.monotonic() - started < 1.0
    slow.join(timeout=5)


def test_keep_alive_responses_are_not_held_back_by_nagle(site):
    """Regression: headers and body are two writes, and with Nagle's algorithm on the body
    waited for the client's delayed ACK, 40 ms on every keep-alive response (wget of a page
    and four requisites took 180 ms instead of 7). Real servers send with TCP_NODELAY."""
    import http.client
    conn = http.client.HTTPConnection(site.base_url.removeprefix("http://"), timeout=5)
    try:
        for path in ("/page-01.html", "/static/style.css", "/page-02.html"):
            conn.request("GET", path)
            assert conn.getresponse().read()
    finally:
        conn.close()
    served = site.server.requests[-3:]
    assert [r.path for r in served] == ["/page-01.html", "/static/style.css", "/page-02.html"]
    assert all(r.nodelay for r in served)


def test_serve_site_context_manager(tmp_path):
    info = generate_site(str(tmp_path), pages=3)
    with serve_site(str(tmp_path)) as base_url:
        assert base_url.startswith("http://127.0.0.1:")
        assert _get(base_url + info.pages[2].path)[0] == 200
    with pytest.raises(OSError):
        _get(base_url + "/index.html", timeout=2)
