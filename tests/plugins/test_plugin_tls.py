"""HTTPS handling: certificate checks on by default, CHECK_SSL_VALIDITY=false accepts self-signed."""
import shutil
import sys

import pytest

from localsite import SiteServer, self_signed_cert

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")

from archivebox import pluginkit


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    (folder / "index.html").write_text("<html><head><title>Secure Page</title></head><body>tls</body></html>")
    with SiteServer(str(folder), tls=self_signed_cert(str(folder))) as server:
        yield server


def test_fetch_verifies_certificates(tls_site):
    with pytest.raises(pluginkit.FetchError, match="CERTIFICATE_VERIFY_FAILED"):
        pluginkit.fetch(tls_site.base_url + "/", timeout=5)
    resp = pluginkit.fetch(tls_site.base_url + "/", timeout=5, check_ssl=False)
    assert resp.status == 200 and b"Secure Page" in resp.body


def test_hooks_honour_check_ssl_validity(tls_site, snapshot_factory):
    url = tls_site.base_url + "/index.html"
    run = snapshot_factory(url).run("headers")
    assert run.returncode != 0, run
    run = snapshot_factory(url).run("headers", env={"HEADERS_CHECK_SSL_VALIDITY": "false"})
    assert run.status == "succeeded", run
    run = snapshot_factory(url).run("title", env={"TITLE_CHECK_SSL_VALIDITY": "false"})
    assert run.result["output_str"] == "Secure Page", run
    if shutil.which("wget"):
        assert snapshot_factory(url).run("wget").returncode != 0
        run = snapshot_factory(url).run("wget", env={"WGET_CHECK_SSL_VALIDITY": "false"})
        assert run.status == "succeeded", run
    for plugin in ("favicon", "parse_html_urls"):
        assert snapshot_factory(url).run(plugin).returncode != 0
        run = snapshot_factory(url).run(plugin, env={f"{plugin.upper()}_CHECK_SSL_VALIDITY": "false"})
        assert run.returncode == 0, run


@pytest.mark.skipif(not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")),
                    reason="chromium is not installed")
def test_chromium_honours_check_ssl_validity(tls_site, snapshot_factory):
    url = tls_site.base_url + "/index.html"
    run = snapshot_factory(url).run("chrome")
    assert run.returncode != 0 and "ERR_CERT" in run.stderr, run
    snap = snapshot_factory(url)
    run = snap.run("chrome", env={"CHROME_CHECK_SSL_VALIDITY": "false"})
    assert run.status == "succeeded", run
    dom = snap.run("dom")
    assert dom.status == "succeeded" and "Secure Page" in open(dom.path("output.html")).read()
