"""title hook: <title> from the saved HTML, else fetched."""
import os

import pytest

from localsite import closed_port


def test_title_from_wget_output(site, snapshot_factory):
    page = site.info.pages[6]
    snap = snapshot_factory(page.url)
    assert snap.run("wget").status == "succeeded"
    start = len(site.server.requests)
    run = snap.run("title")
    assert run.returncode == 0, run
    assert run.status == "succeeded"
    assert run.result["output_str"] == page.title
    assert {"type": "Snapshot", "title": page.title} in run.records
    assert run.result["output_json"]["source"] == "wget"
    assert site.server.requests[start:] == []  # no network when wget's output exists
    assert open(run.path("title.txt"), encoding="utf-8").read().strip() == page.title


def test_title_fetches_when_nothing_saved(site, snapshot_factory):
    page = site.info.pages[7]
    run = snapshot_factory(page.url).run("title")
    assert run.status == "succeeded", run
    assert run.result["output_str"] == page.title
    assert run.result["output_json"]["source"] == "fetch"


def test_title_decodes_entities_whitespace_and_charset(site, snapshot_factory, tmp_path):
    run = snapshot_factory(site.url(site.info.latin1_path)).run("title")
    assert run.result["output_str"] == site.info.latin1_title, run
    from localsite import SiteServer
    (tmp_path / "t.html").write_bytes(
        b"<html><head><title>\n  Fish &amp; Chips &#8212;\t&eacute;t&eacute; &lt;3  \n</title></head></html>")
    (tmp_path / "og.html").write_bytes(b'<html><head><meta property="og:title" content="Only OG"></head></html>')
    (tmp_path / "none.html").write_bytes(b"<html><head></head><body><p>no title</p></body></html>")
    with SiteServer(str(tmp_path)) as server:
        run = snapshot_factory(server.base_url + "/t.html").run("title")
        assert run.result["output_str"] == "Fish & Chips \u2014 \u00e9t\u00e9 <3"
        run = snapshot_factory(server.base_url + "/og.html").run("title")
        assert run.result["output_str"] == "Only OG"
        run = snapshot_factory(server.base_url + "/none.html").run("title")
        assert run.returncode == 0 and run.status == "noresults"  # nothing to read is no failure
        assert not any(r["type"] == "Snapshot" for r in run.records)


def test_title_dom_output_is_used(site, snapshot_factory):
    snap = snapshot_factory(site.url("/page-08.html"))
    os.makedirs(os.path.join(snap.dir, "dom"))
    with open(os.path.join(snap.dir, "dom", "output.html"), "w") as f:
        f.write("<html><head><title>Rendered By Script</title></head><body></body></html>")
    run = snap.run("title")
    assert run.result["output_str"] == "Rendered By Script"
    assert run.result["output_json"]["source"] == "dom"


def test_title_404_and_not_html(site, snapshot_factory):
    run = snapshot_factory(site.url(site.info.missing_path)).run("title")
    assert run.returncode == 0 and run.status == "failed"
    assert run.result["output_str"] == "404 Not Found"
    run = snapshot_factory(site.url(site.info.json_path)).run("title")
    assert run.returncode == 0 and run.status == "noresults"
    assert run.result["output_str"] == "not HTML (application/json): no title to read"


@pytest.mark.parametrize("path, title", [("/feed.rss", "Test Site Feed"), ("/atom.xml", "Test Site Atom")])
def test_title_of_a_feed_is_its_own(site, snapshot_factory, path, title):
    """Regression: a feed given to title was a failure ("not HTML")."""
    run = snapshot_factory(site.url(path)).run("title")
    assert run.status == "succeeded" and run.result["output_str"] == title, run
    assert {"type": "Snapshot", "title": title} in run.records and run.result["output_json"]["from"] == "feed"


def test_title_of_a_pdf_is_its_metadata(tmp_path, snapshot_factory):
    """Regression: a PDF given to title was a failure ("not HTML"); its title is in its metadata."""
    from localsite import SiteServer, pdf_bytes
    (tmp_path / "report.pdf").write_bytes(pdf_bytes("Annual Potash Report (2023)", "Potash output"))
    (tmp_path / "untitled.pdf").write_bytes(pdf_bytes("", "No title here"))
    with SiteServer(str(tmp_path)) as server:
        fetched = snapshot_factory(server.base_url + "/report.pdf").run("title")
        assert fetched.status == "succeeded" and fetched.result["output_str"] == "Annual Potash Report (2023)", fetched
        assert fetched.result["output_json"]["from"] == "pdf metadata"
        saved = snapshot_factory(server.base_url + "/report.pdf")
        saved.fake_wget((tmp_path / "report.pdf").read_bytes(), content_type="application/pdf", name="host/report.pdf")
        run = saved.run("title")
        assert run.result["output_str"] == "Annual Potash Report (2023)" and run.result["output_json"]["source"] == "wget", run
        untitled = snapshot_factory(server.base_url + "/untitled.pdf").run("title")
        assert untitled.status == "noresults" and untitled.result["output_str"] == "the PDF has no title in its metadata"


def test_title_connection_refused_and_timeout(site, snapshot_factory):
    run = snapshot_factory(f"http://127.0.0.1:{closed_port()}/").run("title")
    assert run.returncode != 0, run
    run = snapshot_factory(site.url("/slow?delay=20")).run("title", env={"TITLE_TIMEOUT": "1"})
    assert run.returncode != 0 and run.duration < 5, run
