"""screenshot / pdf / dom hooks: real headless Chromium runs."""
import os
import shutil
import signal
import subprocess
import sys

import psutil
import pytest

from plugintools import config_env, hook_script, wait_until
from localsite import closed_port

CHROME = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
needs_chrome = pytest.mark.skipif(CHROME is None, reason="chromium is not installed")
CHROME_PLUGINS = ("screenshot", "pdf", "dom")


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
    """A private, short TMPDIR: Chromium's profile lives there, so leftovers can be found."""
    import tempfile
    path = tempfile.mkdtemp(prefix="abxt-", dir="/tmp")
    yield path
    for proc in _chrome_procs(path):
        proc.kill()
    shutil.rmtree(path, ignore_errors=True)


def _assert_clean(chrome_tmp):
    wait_until(lambda: not _chrome_procs(chrome_tmp), timeout=10, message="chromium processes to exit")
    assert os.listdir(chrome_tmp) == [], "temporary Chromium profile left behind"


@needs_chrome
def test_screenshot(site, snapshot_factory, chrome_tmp):
    snap = snapshot_factory(site.url("/page-13.html"))
    run = snap.run("screenshot", env={"TMPDIR": chrome_tmp, "SCREENSHOT_RESOLUTION": "800,600"})
    assert run.returncode == 0 and run.status == "succeeded", run
    assert run.result["output_str"] == "screenshot.png"
    with open(run.path("screenshot.png"), "rb") as f:
        head = f.read(24)
    assert head.startswith(b"\x89PNG\r\n\x1a\n")
    assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (800, 600)
    assert run.result["output_json"]["width"] == 800
    assert not [n for n in os.listdir(run.cwd) if n != "screenshot.png"]
    _assert_clean(chrome_tmp)


@needs_chrome
def test_pdf(site, snapshot_factory, chrome_tmp):
    run = snapshot_factory(site.url("/page-14.html")).run("pdf", env={"TMPDIR": chrome_tmp})
    assert run.returncode == 0 and run.status == "succeeded", run
    with open(run.path("output.pdf"), "rb") as f:
        data = f.read()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:]
    _assert_clean(chrome_tmp)


@needs_chrome
def test_dom_and_title_from_dom(site, snapshot_factory, chrome_tmp, tmp_path):
    from localsite import SiteServer
    (tmp_path / "site2").mkdir()
    (tmp_path / "site2" / "js.html").write_text(
        "<html><head><title>Before</title></head><body><p id=p>static</p>"
        "<script>document.title = 'After Script'; document.getElementById('p').textContent = 'dynamicword';"
        "</script></body></html>")
    with SiteServer(str(tmp_path / "site2")) as server:
        snap = snapshot_factory(server.base_url + "/js.html")
        run = snap.run("dom", env={"TMPDIR": chrome_tmp})
        assert run.returncode == 0 and run.status == "succeeded", run
        html = open(run.path("output.html"), encoding="utf-8").read()
        assert "dynamicword" in html and "<title>After Script</title>" in html
        # later hooks read the DOM when wget saved nothing
        title = snap.run("title")
        assert title.result["output_str"] == "After Script" and title.result["output_json"]["source"] == "dom"
        text = snap.run("htmltotext")
        assert "dynamicword" in open(text.path("htmltotext.txt")).read()
    _assert_clean(chrome_tmp)


@needs_chrome
@pytest.mark.parametrize("plugin", CHROME_PLUGINS)
def test_connection_refused_is_transient(plugin, snapshot_factory, chrome_tmp):
    run = snapshot_factory(f"http://127.0.0.1:{closed_port()}/").run(plugin, env={"TMPDIR": chrome_tmp})
    assert run.returncode != 0, run
    assert "ERR_CONNECTION_REFUSED" in run.stderr
    assert not [n for n in os.listdir(run.cwd)]
    _assert_clean(chrome_tmp)


@needs_chrome
def test_http_error_recorded_by_headers_is_failed(site, snapshot_factory, chrome_tmp):
    snap = snapshot_factory(site.url(site.info.missing_path))
    assert snap.run("headers").status == "failed"
    run = snap.run("screenshot", env={"TMPDIR": chrome_tmp})
    assert run.returncode == 0 and run.status == "failed" and run.result["output_str"] == "404 Not Found", run


@needs_chrome
def test_timeout_kills_chromium(site, snapshot_factory, chrome_tmp):
    run = snapshot_factory(site.url("/slow?delay=60")).run(
        "screenshot", env={"TMPDIR": chrome_tmp, "SCREENSHOT_TIMEOUT": "3"})
    assert run.returncode != 0, run
    assert "timed out" in run.stderr
    assert run.duration < 10
    _assert_clean(chrome_tmp)
    assert not os.path.exists(run.path("screenshot.png"))


@needs_chrome
def test_sigterm_kills_chromium(site, snapshot_factory, chrome_tmp):
    snap = snapshot_factory(site.url("/slow?delay=60"))
    cwd = os.path.join(snap.dir, "pdf")
    os.makedirs(cwd)
    env = dict(os.environ, **config_env("pdf"), TMPDIR=chrome_tmp, SNAP_DIR=snap.dir, DATA_DIR=snap.data_dir)
    proc = subprocess.Popen([sys.executable, "-I", hook_script("pdf"), f"--url={snap.url}"], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: _chrome_procs(chrome_tmp), timeout=20, message="chromium to start")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert b'"succeeded"' not in out
    _assert_clean(chrome_tmp)


@pytest.mark.parametrize("plugin", CHROME_PLUGINS)
def test_missing_binary_is_skipped(plugin, site, snapshot_factory):
    run = snapshot_factory(site.url("/page-01.html")).run(plugin, env={"CHROME_BINARY": "/nonexistent/chromium"})
    assert run.returncode == 0 and run.status == "skipped", run
    assert "chromium not installed" in run.result["output_str"]
    run = snapshot_factory(site.url("/page-01.html")).run(plugin, env={"CHROME_BINARY": None, "PATH": "/nonexistent"})
    assert run.returncode == 0 and run.status == "skipped", run
