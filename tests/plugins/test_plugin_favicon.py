"""favicon hook: declared icon, else /favicon.ico, else noresults (a site without an icon is no failure)."""
import os

from localsite import closed_port, png_bytes


def _files(run):
    return sorted(n for n in os.listdir(run.cwd) if n.startswith("favicon."))


def test_favicon_declared_icon(site, snapshot_factory):
    run = snapshot_factory(site.url("/page-03.html")).run("favicon")
    assert run.returncode == 0, run
    assert run.status == "succeeded"
    assert run.result["output_str"] == "favicon.png"
    with open(run.path("favicon.png"), "rb") as f:
        data = f.read()
    with open(os.path.join(site.info.root, "static", "favicon.png"), "rb") as f:
        assert data == f.read()
    assert run.result["output_json"]["url"] == site.url(site.info.favicon_path)


def test_favicon_reads_html_from_wget_output(site, snapshot_factory):
    snap = snapshot_factory(site.url("/page-04.html"))
    assert snap.run("wget").status == "succeeded"
    start = len(site.server.requests)
    run = snap.run("favicon")
    assert run.status == "succeeded", run
    assert "page read from wget" in run.stderr
    assert [r.path for r in site.server.requests[start:]] == [site.info.favicon_path]


def test_favicon_falls_back_to_favicon_ico(site, snapshot_factory):
    run = snapshot_factory(site.url(site.info.noicon_path)).run("favicon")
    assert run.status == "succeeded", run
    assert run.result["output_str"] == "favicon.ico"
    with open(run.path("favicon.ico"), "rb") as f:
        assert f.read(4) == b"\x00\x00\x01\x00"


def test_favicon_data_url_and_broken_declared_icon(tmp_path, snapshot_factory):
    import base64
    from localsite import SiteServer
    icon = png_bytes(2, 2)
    (tmp_path / "data.html").write_text(
        '<link rel="icon" href="/nope.png"><link rel="icon" href="data:image/png;base64,'
        + base64.b64encode(icon).decode() + '"><title>x</title>')
    (tmp_path / "broken.html").write_text('<link rel="icon" href="/nope.png"><title>x</title>')
    with SiteServer(str(tmp_path)) as server:
        run = snapshot_factory(server.base_url + "/data.html").run("favicon")
        assert run.status == "succeeded", run
        assert open(run.path("favicon.png"), "rb").read() == icon
        # declared icon 404s and there is no /favicon.ico: nothing to save, and no failure
        run = snapshot_factory(server.base_url + "/broken.html").run("favicon")
        assert run.returncode == 0 and run.status == "noresults", run
        assert run.result["output_str"] == (f"no icon: none of the 1 it declares is an image, and "
                                            f"{server.base_url}/favicon.ico: 404 Not Found")
        assert _files(run) == []
        # Regression: a page that declares no icon on a site without /favicon.ico was a red failure.
        (tmp_path / "plain.html").write_text("<title>no icon</title>")
        run = snapshot_factory(server.base_url + "/plain.html").run("favicon")
        assert run.status == "noresults" and run.result["output_str"].startswith("no icon: the page declares none, and "), run


def test_favicon_rejects_html_served_as_icon(tmp_path, snapshot_factory):
    from localsite import SiteServer
    (tmp_path / "p.html").write_text('<link rel="icon" href="/icon.html"><title>x</title>')
    (tmp_path / "icon.html").write_text("<html><body>not an image</body></html>")
    with SiteServer(str(tmp_path)) as server:
        run = snapshot_factory(server.base_url + "/p.html").run("favicon")
    assert run.status == "noresults" and "none of the 1 it declares is an image" in run.result["output_str"], run
    assert any("icon.html: not an image (text/html" in miss for miss in run.result["output_json"]["misses"]), run


def test_favicon_page_404_still_tries_favicon_ico(site, snapshot_factory):
    run = snapshot_factory(site.url(site.info.missing_path)).run("favicon")
    assert run.status == "succeeded", run
    assert run.result["output_str"] == "favicon.ico"


def test_favicon_connection_refused_is_transient(snapshot_factory):
    run = snapshot_factory(f"http://127.0.0.1:{closed_port()}/").run("favicon")
    assert run.returncode != 0, run


def test_favicon_timeout(site, snapshot_factory):
    run = snapshot_factory(site.url("/slow?delay=20")).run("favicon", env={"FAVICON_TIMEOUT": "1"})
    assert run.returncode != 0, run
    assert run.duration < 5
