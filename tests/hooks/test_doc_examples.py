"""The example plugins of docs/plugins.md, run for real through the engine (the docs cannot rot):
a shell hook, a background hook using the plugin kit, and a crawl-level hook with the
snapshot hook that reads what it prepared."""

from __future__ import annotations

import json
from pathlib import Path

from localsite import SiteServer

from .util import collection, results, run_pools, snapshot_dir

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "plugins"
FETCH = "on_Snapshot__25_example_fetch.finite.bg.py"
DU = "on_Snapshot__94_example_du.sh"
STAMP = "on_Snapshot__95_example_stamp.py"


def test_the_documented_example_plugins_run_through_the_engine(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    page = b"<html><head><title>Example</title></head><body><p>hello plugin authors</p></body></html>"
    (site / "page.html").write_bytes(page)
    with SiteServer(str(site)) as server:
        ok, missing, big = (f"{server.base_url}/{name}" for name in ("page.html", "missing.html", "page.html?big"))
        coll = collection(tmp_path, "example_du,example_fetch,example_crawl", PLUGIN_DIRS=str(EXAMPLES))
        coll.cli("add", "--bg", "-c", "EXAMPLE_CRAWL_LABEL=docs-run", ok, missing)
        coll.cli("add", "--bg", "-c", "EXAMPLE_DU_MAX_KB=1", big)
        run_pools(coll)
    got = results(coll)

    # the background hook (pluginkit.fetch): the body saved; a 404 is a final failure that says so
    assert got[(ok, FETCH)]["status"] == "succeeded", got[(ok, FETCH)]
    assert (snapshot_dir(coll, ok) / "example_fetch" / "response.body").read_bytes() == page
    info = json.loads((snapshot_dir(coll, ok) / "example_fetch" / "response.json").read_text())
    assert info["status"] == 200 and info["bytes"] == len(page) and info["truncated"] is False
    assert got[(missing, FETCH)]["status"] == "failed" and got[(missing, FETCH)]["output_str"] == "404 Not Found"

    # the shell hook: its config default passes, a per-crawl limit of 1 KiB fails with its reason
    assert got[(ok, DU)]["status"] == "succeeded" and got[(ok, DU)]["output_str"].endswith(" KiB"), got[(ok, DU)]
    kb = int((snapshot_dir(coll, ok) / "example_du" / "du.txt").read_text())
    assert got[(ok, DU)]["output_str"] == f"{kb} KiB" and kb >= 1
    assert got[(big, DU)]["status"] == "failed", got[(big, DU)]
    assert "more than EXAMPLE_DU_MAX_KB=1" in got[(big, DU)]["output_str"]

    # the crawl-level hook ran once per crawl; each snapshot hook read what it wrote
    stamp = json.loads((snapshot_dir(coll, ok) / "example_crawl" / "stamp.json").read_text())
    crawl_id = coll.scalar("SELECT crawl_id FROM core_snapshot WHERE url=?", (ok,))
    assert stamp["label"] == "docs-run" and stamp["url"] == ok
    assert stamp["crawl_id"].replace("-", "") == str(crawl_id).replace("-", "")
    assert got[(ok, STAMP)]["status"] == "succeeded" and got[(big, STAMP)]["status"] == "succeeded"
    other = json.loads((snapshot_dir(coll, big) / "example_crawl" / "stamp.json").read_text())
    assert other["label"] == "example" and other["crawl_id"] != stamp["crawl_id"]
    setups = sorted((coll.root / "crawls").rglob("example_crawl/setup.json"))
    assert len(setups) == 2, setups
