"""parse_html_urls hook: <a href> outlinks of the page."""
import json


def test_parse_html_urls_from_wget_output(site, snapshot_factory):
    page = site.info.pages[0]
    snap = snapshot_factory(page.url)
    assert snap.run("wget").status == "succeeded"
    start = len(site.server.requests)
    run = snap.run("parse_html_urls")
    assert run.returncode == 0 and run.status == "succeeded", run
    urls = run.urls()
    expected = [site.url(p) for p in ("/index.html", page.links[1], page.links[2], page.links[3], "/missing.html")]
    expected.append(site.info.external_url)
    assert urls == expected  # document order, deduplicated, fragments stripped, own URL dropped
    assert not any(u.startswith(("mailto:", "javascript:", "data:")) for u in urls)
    assert site.server.requests[start:] == []  # read from disk, the unconverted copy
    lines = [json.loads(l) for l in open(run.path("urls.jsonl"))]
    assert [l["url"] for l in lines] == urls
    assert run.result["output_json"]["count"] == len(urls)


def test_parse_html_urls_base_href_and_fetch(tmp_path, snapshot_factory):
    from localsite import SiteServer
    (tmp_path / "b.html").write_text(
        '<html><head><base href="/deep/dir/"></head><body>'
        '<a href="rel.html">r</a><a href="../up.html#x">u</a><a href="/abs">a</a>'
        '<a href="HTTPS://Other.Example/Path?q=1">o</a><a href="  ">blank</a><a href="tel:123">t</a>'
        '<a href="rel.html">dup</a><a href="http://[bad">bad</a></body></html>')
    with SiteServer(str(tmp_path)) as server:
        base = server.base_url
        run = snapshot_factory(base + "/b.html").run("parse_html_urls")
    assert run.status == "succeeded", run
    assert run.result["output_json"]["source"] == "fetch"
    assert run.urls() == [base + "/deep/dir/rel.html", base + "/deep/up.html", base + "/abs",
                          "https://other.example/Path?q=1"]


def test_parse_html_urls_non_html_and_garbage(site, snapshot_factory):
    snap = snapshot_factory(site.url(site.info.rss_path))
    assert snap.run("wget").status == "succeeded"
    run = snap.run("parse_html_urls")
    assert run.returncode == 0 and run.status == "skipped", run
    run = snapshot_factory(site.url(site.info.json_path)).run("parse_html_urls")
    assert run.returncode == 0 and run.status == "skipped", run
    snap = snapshot_factory("http://127.0.0.1:9/garbage")
    snap.fake_wget(b"<a href='http://ok.example/'>" + bytes(range(256)) * 40 + b"<a href=\"\x00\xff\">")
    run = snap.run("parse_html_urls")
    assert run.returncode == 0 and run.status == "succeeded", run
    assert "http://ok.example/" in run.urls()


def test_parse_html_urls_404_and_refused(site, snapshot_factory):
    from localsite import closed_port
    run = snapshot_factory(site.url(site.info.missing_path)).run("parse_html_urls")
    assert run.returncode == 0 and run.status == "failed" and run.result["output_str"] == "404 Not Found"
    run = snapshot_factory(f"http://127.0.0.1:{closed_port()}/").run("parse_html_urls")
    assert run.returncode != 0
