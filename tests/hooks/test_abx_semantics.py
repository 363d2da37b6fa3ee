"""abx-plugins 1.13's hook semantics, as ArchiveBox 0.9.73 runs them through abx-dl, with fixture
plugins (``tests/hooks/plugins``) named and configured as abx-plugins names and configures its own:
crawl-level ``CrawlSetup`` hooks, the ``base`` plugin's shared keys, ``ABX_RUNTIME=archivebox``,
exit code 10 for "skipped"."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from helpers import FIXTURE_PLUGINS, wait_until

from archivebox.hooks.outcome import AttemptOutcome, Outcome
from archivebox.config import ConfigError
from archivebox.hooks.catalog import PluginCatalog
from archivebox.core.models import ArchiveResult, Process
from archivebox.hooks.config import load_meta
from archivebox.sideeffects import hooks as hook_effects
from archivebox.sideeffects.hooks import run_hook
from archivebox.hooks.discovery import plugin_dirs

from .util import collection, db_time, kill_quietly, make_snapshot, pid_dead, results, snapshot_dir, started_result, tick_result

ABX_PLUGINS = Path(__file__).resolve().parent / "plugins"


def abx_collection(tmp_path: Path, plugins: str, **env: str):
    """A collection whose PLUGIN_DIRS holds the usual fixtures and the abx-shaped ones (with a ``base``)."""
    return collection(tmp_path, plugins, PLUGIN_DIRS=os.pathsep.join((str(FIXTURE_PLUGINS), str(ABX_PLUGINS))), **env)


def kill_pids_in(root: Path, *names: str) -> None:
    """Clean-up of a test that failed half-way: kill the daemons that recorded ``{"pid": ...}`` in these files."""
    for name in names:
        for path in root.rglob(name):
            kill_quietly(json.loads(path.read_text())["pid"])


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
    assert prepare["argv"] == [f"--url={urls[0]}", f"--crawl-id={crawl.name}", "--depth=0"]  # its first URL, as abx-dl
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


def test_daemons_are_waited_for_until_ready_live_past_their_timeout_and_are_stopped_at_their_owners_cleanup(tmp_path):
    """abxbg's daemons have a 1 s timeout; abxuse's capture takes 1.5 s and uses them both. The
    crawl's browser daemon lives until every snapshot is done, the snapshot's tab daemon until
    the snapshot's other hooks are, and after the recorder that requires it; hooks after a
    daemon start only once it printed its first line; a daemon stopped at cleanup is judged by
    its own record (none: noresults)."""
    coll = abx_collection(tmp_path, "abxuse", ABXBG_TIMEOUT="1")  # abxuse requires abxbg: choosing it brings abxbg in
    urls = ["https://example.com/daemons/1", "https://example.com/daemons/2"]
    try:
        coll.cli("add", *urls)
    finally:
        kill_pids_in(coll.root, "launch.json", "tab.json")
    crawl = crawl_folder(coll)
    launch = json.loads((crawl / "abxbg" / "launch.json").read_text())
    wait = json.loads((crawl / "abxbg" / "wait.json").read_text())
    assert wait["launched"] and wait["start"] >= launch["ready"]  # the next crawl hook waited for readiness
    browser_term = float((crawl / "abxbg" / "term.txt").read_text())
    sealed = {r["url"]: db_time(r["finished_at"]) for r in coll.query("SELECT url, finished_at FROM core_snapshot")}
    for url in urls:
        folder = snapshot_dir(coll, url)
        tab = json.loads((folder / "abxbg" / "tab.json").read_text())
        capture = json.loads((folder / "abxuse" / "capture.json").read_text())
        assert capture["start"] >= tab["ready"]  # the next step waited for the tab to be ready
        assert capture["browser"] and capture["tab"], capture  # both alive 1.5 s in, past their 1 s timeout
        # at cleanup the recorder (abxuse requires abxbg) is stopped and flushes before the tab closes
        recorder = json.loads((folder / "abxuse" / "recorder.json").read_text())
        assert recorder["tab_alive_while_flushing"], recorder
        assert pid_dead(tab["pid"])
        assert capture["end"] <= browser_term
    tabs = coll.query("SELECT p.reason, p.exit_code, p.ended_at, p.timeout, s.finished_at FROM core_process p "
                      "JOIN core_archiveresult r ON p.archiveresult_id = r.id JOIN core_snapshot s ON r.snapshot_id = s.id "
                      "WHERE r.hook_name = 'on_Snapshot__20_abxbg_tab.daemon.bg.py'")
    assert len(tabs) == 2
    for tab in tabs:
        # stopped at the snapshot's cleanup, before it sealed; no wall-clock timeout of its own
        assert (tab["reason"], tab["exit_code"], tab["timeout"]) == ("stopped at cleanup", -15, None)
        assert db_time(tab["ended_at"]) <= db_time(tab["finished_at"])
    assert browser_term >= max(sealed.values())  # the crawl's daemon outlived every snapshot
    assert browser_term < db_time(coll.scalar("SELECT finished_at FROM core_crawl"))  # and was stopped before the crawl sealed
    assert pid_dead(launch["pid"])

    statuses = {(r["snapshot_id"] is not None, r["hook_name"]): (r["status"], r["output_str"]) for r in coll.query(
        "SELECT snapshot_id, hook_name, status, output_str FROM core_archiveresult")}
    assert statuses == {
        (False, "on_CrawlSetup__90_abxbg_launch.daemon.bg.py"): ("succeeded", "browser closed"),
        (False, "on_CrawlSetup__91_abxbg_wait.py"): ("succeeded", "browser is up"),
        (True, "on_Snapshot__20_abxbg_tab.daemon.bg.py"): ("noresults", ""),
        (True, "on_Snapshot__25_abxuse_recorder.daemon.bg.py"): ("succeeded", "recorder.json"),
        (True, "on_Snapshot__30_abxuse_capture.py"): ("succeeded", "captured"),
    }
    assert coll.counts("crawl") == {"sealed": 1} and coll.counts("snapshot") == {"sealed": 2}


def test_a_plugin_waiting_for_background_cleanup_starts_once_downloads_ended_and_recorders_were_stopped(tmp_path):
    """abxhash (step 9, ``wait_for_background_cleanup`` as abx-plugins' hashes) lists the snapshot's
    files: the finite download of step 3 (1.5 s, ignoring SIGTERM as wget does) is awaited, the
    recorder daemon of step 2 is stopped first (it writes its output then), so both are listed."""
    coll = abx_collection(tmp_path, "abxfetch,abxrec,abxhash")
    url = "https://example.com/cleanup"
    coll.cli("add", url)
    folder = snapshot_dir(coll, url)
    manifest = json.loads((folder / "abxhash" / "manifest.json").read_text())
    assert manifest["files"]["abxfetch/page.html"] > 0 and "abxrec/responses.json" in manifest["files"], manifest
    recorded = json.loads((folder / "abxrec" / "responses.json").read_text())
    assert manifest["start"] >= float((folder / "abxfetch" / "end.txt").read_text())
    assert manifest["start"] >= recorded["stopped"]
    got = {hook: (r["status"], r["output_str"]) for (_, hook), r in results(coll).items()}
    assert got == {"on_Snapshot__24_abxrec.daemon.bg.py": ("succeeded", "responses.json"),
                   "on_Snapshot__35_abxfetch.finite.bg.py": ("succeeded", "page.html"),
                   "on_Snapshot__93_abxhash.py": ("succeeded", "3 files")}
    reasons = {r["label"].split("/")[1]: r["reason"] for r in coll.query("SELECT label, reason FROM core_process WHERE kind='hook'")}
    assert reasons["on_Snapshot__24_abxrec.daemon.bg.py"] == "stopped at cleanup"
    assert reasons["on_Snapshot__35_abxfetch.finite.bg.py"] == ""  # awaited, never stopped


def test_a_plugin_waiting_for_another_starts_once_that_ones_results_are_final(tmp_path):
    """abxafter declares ``wait_for_plugins: ["abxslow"]``; both are in step 5, which otherwise runs
    its hooks side by side."""
    coll = abx_collection(tmp_path, "abxslow,abxafter")
    url = "https://example.com/wait-for"
    coll.cli("add", url)
    folder = snapshot_dir(coll, url)
    slow = json.loads((folder / "abxslow" / "slow.json").read_text())
    after = json.loads((folder / "abxafter" / "after.json").read_text())
    assert after["start"] >= slow["end"]
    assert {r["status"] for r in results(coll).values()} == {"succeeded"}


def test_choosing_a_plugin_by_name_brings_in_the_plugins_it_requires(monkeypatch):
    """``required_plugins``: PLUGINS=abxuse selects abxbg too (transitively, case aside), as
    ArchiveBox's plugin selection does; nothing else is brought in."""
    cat = PluginCatalog(plugin_dirs(Path("/nonexistent"), os.pathsep.join((str(FIXTURE_PLUGINS), str(ABX_PLUGINS)))))
    assert cat.enabled_plugins([{"PLUGINS": "AbxUse"}]) == {"abxuse", "abxbg"}
    assert cat.enabled_plugins([{"PLUGINS": "abxbg"}]) == {"abxbg"}
    assert cat.meta("abxhash").wait_for_background_cleanup and cat.meta("abxafter").wait_for_plugins == ("abxslow",)


@pytest.mark.parametrize("top, message", [
    ('"required_plugins": "chrome"', "'required_plugins' must be a list of plugin names, got 'chrome'"),
    ('"wait_for_plugins": [""]', "'wait_for_plugins' must be a list of plugin names, got ['']"),
    ('"wait_for_background_cleanup": "yes"', "'wait_for_background_cleanup' must be true or false, got 'yes'"),
])
def test_a_config_json_with_unusable_run_keys_is_refused_in_one_line(tmp_path, top, message):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text(f'{{"type": "object", {top}, "properties": {{}}}}')
    with pytest.raises(ConfigError) as err:
        load_meta(tmp_path / "bad")
    assert str(err.value) == f"{tmp_path / 'bad' / 'config.json'}: {message}"


def test_a_daemons_watcher_records_its_readiness_keeps_its_deadline_ahead_and_stops_it_when_asked(use_plugins, monkeypatch):
    """In-process, the real side effect and hook: a ``.daemon.bg`` hook has no timeout, so its
    watcher keeps its Process row's deadline ahead (a row left at launch + 30 s would be closed
    as lost); its first stdout line is recorded as ``ready_at``; ``stop_requested_at`` (what its
    owner's cleanup writes) stops it with SIGTERM, and the tick judges that stop as no failure."""
    monkeypatch.setattr(settings, "PLUGIN_DIRS", os.pathsep.join((str(FIXTURE_PLUGINS), str(ABX_PLUGINS))))
    use_plugins("abxbg", ABXBG_READY_DELAY="0.2")
    snapshot = make_snapshot("https://example.com/watcher")
    result = started_result(snapshot, "abxbg", "on_Snapshot__20_abxbg_tab.daemon.bg.py")
    run_hook.call_local(result.pk, 1)
    key = f"hook:{result.pk}:1"
    try:
        wait_until(lambda: ArchiveResult.objects.filter(pk=result.pk, ready_at__isnull=False).exists(), timeout=20,
                   message="its readiness to be recorded")
        row = wait_until(lambda: Process.objects.filter(key=key, status="running").first(), timeout=5, message="its row")
        assert row.timeout is None
        assert row.retry_at >= timezone.now() + dt.timedelta(seconds=60)  # renewed well past launch + 30 s
        ArchiveResult.objects.filter(pk=result.pk).update(stop_requested_at=timezone.now())
        wait_until(lambda: Process.objects.filter(key=key, status="exited").exists(), timeout=20, message="it to be stopped")
    finally:
        tab = snapshot.output_dir / "abxbg" / "tab.json"
        if tab.exists():
            kill_quietly(json.loads(tab.read_text())["pid"])
    hook_effects.RUNS.join(10)
    row = Process.objects.get(key=key)
    assert (row.reason, row.exit_code, AttemptOutcome.of(row.result_json)) == ("stopped at cleanup", -15, AttemptOutcome(Outcome.NO_RESULTS))
    judged = tick_result(ArchiveResult.objects.get(pk=result.pk))
    assert (judged.status, judged.output_str) == ("noresults", "")
