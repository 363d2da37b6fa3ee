"""abx-plugins 1.13's hook semantics, as ArchiveBox 0.9.73 runs them through abx-dl, with fixture
plugins (``tests/hooks/plugins``) named and configured as abx-plugins names and configures its own:
crawl-level ``CrawlSetup`` hooks, the ``base`` plugin's shared keys, ``ABX_RUNTIME=archivebox``,
exit code 10 for "skipped"."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import FIXTURE_PLUGINS

from .util import collection, results, snapshot_dir

ABX_PLUGINS = Path(__file__).resolve().parent / "plugins"


def abx_collection(tmp_path: Path, plugins: str, **env: str):
    """A collection whose PLUGIN_DIRS holds the usual fixtures and the abx-shaped ones (with a ``base``)."""
    return collection(tmp_path, plugins, PLUGIN_DIRS=os.pathsep.join((str(FIXTURE_PLUGINS), str(ABX_PLUGINS))), **env)


def crawl_folder(coll) -> Path:
    [folder] = (coll.root / "crawls").iterdir()
    return folder


def test_crawl_setup_hooks_run_once_per_crawl_in_its_folder_before_any_snapshot_and_1_11_crawl_hooks_still_run(tmp_path):
    coll = abx_collection(tmp_path, "abxsetup", PERSONAS_DIR=str(tmp_path / "my-personas"))
    urls = ["https://example.com/setup/1", "https://example.com/setup/2"]
    coll.cli("add", *urls)
    crawl = crawl_folder(coll)

    crawl_results = {r["hook_name"]: dict(r) for r in coll.query(
        "SELECT hook_name, status, output_str, step FROM core_archiveresult WHERE snapshot_id IS NULL")}
    assert {name: (r["status"], r["output_str"], r["step"]) for name, r in crawl_results.items()} == {
        "on_Crawl__05_abxsetup_legacy.sh": ("succeeded", "legacy crawl hook", 0),
        "on_CrawlSetup__80_abxsetup_prepare.py": ("succeeded", "prepared", 8),
        # exit code 10 is "skipped", in the hook's words
        "on_CrawlSetup__85_abxsetup_optional.sh": ("skipped", "no extension configured, nothing to set up", 8),
    }
    got = results(coll)
    assert {key[1] for key in got} == {"on_Snapshot__10_abxsetup_snap.py"}  # crawl hooks are not run per snapshot
    assert {r["status"] for r in got.values()} == {"succeeded"}

    prepare = json.loads((crawl / "abxsetup" / "prepare.json").read_text())
    assert prepare["cwd"] == str(crawl / "abxsetup")
    assert prepare["argv"] == [f"--crawl-id={crawl.name}", "--depth=0"]
    env = prepare["env"]
    assert (env["CRAWL_DIR"], env["SNAP_DIR"], env["DATA_DIR"]) == (str(crawl), str(crawl), str(coll.root))
    assert env["ABX_RUNTIME"] == "archivebox"
    legacy = float((crawl / "abxsetup" / "legacy.txt").read_text())
    assert legacy <= prepare["start"]  # step 0 before step 8

    for url in urls:
        snap = json.loads((snapshot_dir(coll, url) / "abxsetup" / "snap.json").read_text())
        assert snap["start"] > prepare["end"]  # the crawl's setup before any of its snapshots
        assert snap["env"]["SNAP_DIR"] == str(snapshot_dir(coll, url)) and snap["env"]["CRAWL_DIR"] == str(crawl)
        assert snap["env"]["ABX_RUNTIME"] == "archivebox"

    # the base plugin's keys reach every hook: the collection's folders, the user's value first
    machine_tmp = Path(env["TMP_DIR"])
    assert machine_tmp.parent == coll.root / "tmp" and machine_tmp.is_dir()
    assert env["ABXPKG_LIB_DIR"] == str(coll.root / "lib")
    assert env["PERSONAS_DIR"] == str(tmp_path / "my-personas")
    assert (env["ACTIVE_PERSONA"], env["MEMORY_LIMIT"], env["ABX_INSTALL_CACHE"]) == ("Default", "2147483648", "{}")
    assert "NODE_MODULES_DIR" not in env  # empty: left unset, as abx-plugins' hooks read an empty one
    assert env["PATH"] == os.environ["PATH"] and env["USER_AGENT"]  # an empty schema default never blanks them


def test_abx_runtime_is_archivebox_even_without_a_base_plugin(tmp_path):
    coll = collection(tmp_path, "h_env")
    url = "https://example.com/no-base"
    coll.cli("add", url)
    env = json.loads((snapshot_dir(coll, url) / "h_env" / "env.json").read_text())["env"]
    assert env["ABX_RUNTIME"] == "archivebox"
    assert "TMP_DIR" not in env and "PERSONAS_DIR" not in env  # only a base plugin's schema brings those
