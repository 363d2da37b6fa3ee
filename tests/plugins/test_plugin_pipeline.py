"""All built-in hooks run in step order on one snapshot, as the engine will run them."""
import glob
import importlib.util
import json
import os
import shutil

import pytest

from plugintools import PLUGINS_DIR

from archivebox import fulltext

HAS_CHROME = any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome"))
HAS_READABILITY = importlib.util.find_spec("readability") is not None


def ordered_plugins():
    hooks = sorted(glob.glob(os.path.join(PLUGINS_DIR, "*", "on_Snapshot__*")), key=os.path.basename)
    return [os.path.basename(os.path.dirname(h)) for h in hooks]


def run_pipeline(snap, env=None, python_flags=("-I",)):
    runs = {}
    for plugin in ordered_plugins():
        runs[plugin] = snap.run(plugin, env=env, python_flags=python_flags)
        assert runs[plugin].returncode == 0, runs[plugin]
    return runs


@pytest.mark.skipif(shutil.which("wget") is None, reason="GNU wget is not installed")
def test_pipeline_on_a_page(site, snapshot_factory):
    page = site.info.pages[15]
    snap = snapshot_factory(page.url)
    before = set(os.listdir(snap.data_dir))
    runs = run_pipeline(snap)
    status = {p: r.status for p, r in runs.items()}
    expected = {
        "headers": "succeeded", "wget": "succeeded", "favicon": "succeeded", "title": "succeeded",
        "readability": "succeeded", "htmltotext": "succeeded", "parse_html_urls": "succeeded",
        "parse_txt_urls": "skipped", "parse_rss_urls": "skipped", "search": "succeeded", "hashes": "succeeded",
    }
    for plugin in ("chrome", "screenshot", "pdf", "dom", "mhtml"):
        expected[plugin] = "succeeded" if HAS_CHROME else "skipped"
    if not HAS_READABILITY:
        expected["readability"] = "skipped"
    assert status == expected
    assert {"type": "Snapshot", "title": page.title} in runs["title"].records
    assert site.url(page.links[2]) in runs["parse_html_urls"].urls()
    # every hook wrote only inside its own folder; the search index is the one shared file
    assert sorted(os.listdir(snap.dir)) == sorted(expected)
    assert set(os.listdir(snap.data_dir)) - before <= {"search.sqlite3", "search.sqlite3-wal", "search.sqlite3-shm"}
    hashed = json.load(open(runs["hashes"].path("hashes.json")))["files"]
    assert any(p.startswith("wget/") for p in hashed) and "title/title.txt" in hashed
    assert not any(p.startswith("hashes/") for p in hashed)
    hits = fulltext.search(os.path.join(snap.data_dir, "search.sqlite3"), page.word)
    assert [h["snapshot_id"] for h in hits] == [snap.id]


@pytest.mark.skipif(shutil.which("wget") is None, reason="GNU wget is not installed")
def test_pipeline_on_a_feed(site, snapshot_factory):
    snap = snapshot_factory(site.url(site.info.rss_path))
    env = {"CHROME_BINARY": "/nonexistent/chromium"}  # the browser adds nothing to this case
    runs = run_pipeline(snap, env=env)
    assert runs["parse_rss_urls"].status == "succeeded"
    assert runs["parse_rss_urls"].urls() == site.info.rss_links
    assert runs["parse_html_urls"].status == "skipped"
    assert runs["parse_txt_urls"].status == "skipped"
    # not HTML: the title is the feed's own (<channel><title>), not a failure
    assert runs["title"].status == "succeeded"
    assert [r["title"] for r in runs["title"].records if r.get("type") == "Snapshot"] == ["Test Site Feed"]
    assert runs["htmltotext"].status == "skipped"
    assert runs["search"].status == "succeeded"  # no text, but the feed's title is searchable
