"""Running hooks: one result per hook, steps 0..9 in order, parallel steps, background hooks, crawl hooks."""

from __future__ import annotations

import datetime as dt
import json
from itertools import combinations

from django.conf import settings
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Crawl
from archivebox.tasks import registry as actor_registry
from archivebox.tasks.ticks import run_tick

from .util import (
    collection, db_time, engine_config, hook_rows, kill_quietly, kill_recorded, pid_dead, results, run_with_pools, snapshot_dir,
    timeline, unfinished,
)

STEPS_HOOKS = {
    "on_Snapshot__00_zero.py": (0, False), "on_Snapshot__05_zero.sh": (0, False), "on_Snapshot__12_watch.finite.bg.py": (1, True),
    "on_Snapshot__15_one.sh": (1, False), "on_Snapshot__21_par.py": (2, False), "on_Snapshot__22_par.sh": (2, False),
    "on_Snapshot__30_soft_fail.sh": (3, False), "on_Snapshot__34_crash.py": (3, False), "on_Snapshot__50_after.py": (5, False),
    "on_Snapshot__tail.sh": (9, False),
}


def test_steps_run_in_order_with_parallel_steps_non_blocking_background_and_failures_not_stopping_later_hooks(tmp_path):
    coll = collection(tmp_path, "h_steps", HOOK_MAX_ATTEMPTS="1")
    urls = ["https://example.com/steps/1", "https://example.com/steps/2", "https://example.com/steps/3"]
    coll.cli("add", *urls, check=False)
    got = results(coll)
    for url in urls:
        # one result per hook per snapshot, with the step (and background flag) of its name
        rows = coll.query("SELECT hook_name, step, background FROM core_archiveresult WHERE snapshot_id="
                          "(SELECT id FROM core_snapshot WHERE url=?)", (url,))
        assert {r["hook_name"]: (r["step"], bool(r["background"])) for r in rows} == STEPS_HOOKS
        assert len(rows) == len(STEPS_HOOKS)
        status = {hook: got[(url, hook)]["status"] for hook in STEPS_HOOKS}
        assert status == {hook: "succeeded" for hook in STEPS_HOOKS} | {
            "on_Snapshot__30_soft_fail.sh": "failed", "on_Snapshot__34_crash.py": "failed"}
        assert got[(url, "on_Snapshot__30_soft_fail.sh")]["output_str"] == "404 Not Found"
        assert "exit code 1" in got[(url, "on_Snapshot__34_crash.py")]["output_str"]

        marks = timeline(snapshot_dir(coll, url) / "timeline.txt")
        assert set(marks) == set(STEPS_HOOKS) and all(set(m) == {"start", "end"} for m in marks.values()), marks
        # no hook of step N starts before every foreground hook of the earlier steps has ended
        for hook, (step, _) in STEPS_HOOKS.items():
            earlier = [h for h, (s, bg) in STEPS_HOOKS.items() if s < step and not bg]
            for other in earlier:
                assert marks[hook]["start"] >= marks[other]["end"], f"{hook} (step {step}) started before {other} ended"
        # the two foreground hooks of step 2 (0.6 s each) ran at the same time
        a, b = marks["on_Snapshot__21_par.py"], marks["on_Snapshot__22_par.sh"]
        assert max(a["start"], b["start"]) < min(a["end"], b["end"]), (a, b)
        # the background hook of step 1 spanned steps 2..5 without holding them back
        watch = marks["on_Snapshot__12_watch.finite.bg.py"]
        for later in ("on_Snapshot__21_par.py", "on_Snapshot__30_soft_fail.sh", "on_Snapshot__50_after.py"):
            assert marks[later]["start"] < watch["end"]
    assert coll.counts("snapshot") == {"sealed": 3} and coll.counts("crawl") == {"sealed": 1}
    # snapshots in flight together run their steps concurrently (each keeping its own order)
    spans = [timeline(snapshot_dir(coll, url) / "timeline.txt")["on_Snapshot__21_par.py"] for url in urls]
    assert any(max(a["start"], b["start"]) < min(a["end"], b["end"]) for a, b in combinations(spans, 2)), spans


def test_background_hooks_still_running_when_their_snapshot_is_done_are_stopped_at_cleanup_before_it_seals(tmp_path):
    """Each prints its first line (ready), then runs until stopped; the snapshot's cleanup stops
    them (SIGTERM, their plugin's timeout as the grace, SIGKILL) once its other hooks are done,
    records how each ended, then seals. A hook stopped at cleanup is not a failure."""
    coll = collection(tmp_path, "h_bg", H_BG_TIMEOUT="5")
    url = "https://example.com/bg"
    try:
        run_with_pools(coll, url)
    finally:
        kill_recorded(coll.root / "archive", "polite_pid.txt", "deaf_pid.txt", "rude.txt", "rude_child.txt")
    got = results(coll)
    sealed_at = db_time(coll.scalar("SELECT finished_at FROM core_snapshot"))
    folder = snapshot_dir(coll, url) / "h_bg"
    rows = {r["label"].split("/")[1]: r for r in hook_rows(coll)}
    fg_ended = db_time(rows["on_Snapshot__20_fg.py"]["ended_at"])
    term = float((folder / "term.txt").read_text())
    assert fg_ended <= term < sealed_at  # stopped once the other hooks were done, before the seal

    polite = got[(url, "on_Snapshot__10_polite.bg.py")]
    assert (polite["status"], polite["output_str"]) == ("succeeded", "stopped politely")  # its record decides

    rude = got[(url, "on_Snapshot__11_rude.bg.sh")]
    assert (rude["status"], rude["output_str"]) == ("noresults", "")  # killed by the SIGTERM, no record: nothing saved
    assert pid_dead(int((folder / "rude.txt").read_text())) and pid_dead(int((folder / "rude_child.txt").read_text()))

    deaf = got[(url, "on_Snapshot__13_deaf.bg.py")]
    assert deaf["status"] == "failed" and deaf["output_str"] == \
        "stopped at cleanup, then exit code -9 (it did not stop within its grace)", deaf
    assert pid_dead(int((folder / "deaf_pid.txt").read_text()))
    assert got[(url, "on_Snapshot__12_quick.bg.sh")]["status"] == "succeeded"
    assert got[(url, "on_Snapshot__20_fg.py")]["status"] == "succeeded"
    for hook in ("on_Snapshot__10_polite.bg.py", "on_Snapshot__11_rude.bg.sh", "on_Snapshot__13_deaf.bg.py"):
        assert rows[hook]["status"] == "exited" and rows[hook]["reason"] == "stopped at cleanup"
        assert db_time(rows[hook]["ended_at"]) <= sealed_at
    # The rude one dies of the SIGTERM; its sh gate outlives it and reports that as a shell does (128 + 15).
    assert (rows["on_Snapshot__10_polite.bg.py"]["exit_code"], rows["on_Snapshot__11_rude.bg.sh"]["exit_code"]) == (0, 143)
    deaf_row = rows["on_Snapshot__13_deaf.bg.py"]
    assert deaf_row["exit_code"] == -9  # SIGKILL after the grace: its plugin's timeout, 5 s
    assert db_time(deaf_row["ended_at"]) - term >= 5.0 - 0.6
    assert rows["on_Snapshot__12_quick.bg.sh"]["reason"] == "" and rows["on_Snapshot__12_quick.bg.sh"]["exit_code"] == 0


def test_foreground_add_returns_only_once_background_hooks_stopped_at_cleanup_are_recorded(tmp_path):
    """The polite hook takes 1.5 s to wind down after SIGTERM; ``add`` must still record how it ended."""
    coll = collection(tmp_path, "h_bg", H_BG_TIMEOUT="4", H_BG_STOP_SECONDS="1.5")
    url = "https://example.com/fg-bg"
    try:
        coll.cli("add", url)
    finally:
        kill_recorded(coll.root / "archive", "polite_pid.txt", "deaf_pid.txt", "rude.txt", "rude_child.txt")
    got = results(coll)
    assert (got[(url, "on_Snapshot__10_polite.bg.py")]["status"], got[(url, "on_Snapshot__10_polite.bg.py")]["output_str"]) == \
        ("succeeded", "stopped politely")
    assert got[(url, "on_Snapshot__11_rude.bg.sh")]["status"] == "noresults"
    assert got[(url, "on_Snapshot__13_deaf.bg.py")]["status"] == "failed"
    rows = {r["label"].split("/")[1]: r for r in hook_rows(coll)}
    assert rows["on_Snapshot__11_rude.bg.sh"]["reason"] == "stopped at cleanup"
    assert unfinished(coll) == 0


def test_a_background_hook_runs_until_its_own_timeout_while_steps_go_on(tmp_path):
    """h_bgslow's step-1 background hook has a 1 s timeout; sleepy's step-4 foreground hook takes 2.5 s."""
    coll = collection(tmp_path, "h_bgslow,sleepy", H_BGSLOW_TIMEOUT="1", HOOK_MAX_ATTEMPTS="1", SLEEPY_SECONDS="2.5")
    url = "https://example.com/bgslow"
    coll.cli("add", url)
    got = results(coll)
    slow = got[(url, "on_Snapshot__10_slow.bg.py")]
    assert slow["status"] == "failed" and "timed out after 1s" in slow["output_str"], slow
    assert got[(url, "on_Snapshot__40_sleepy.sh")]["status"] == "succeeded"
    rows = {r["label"].split("/")[1]: r for r in hook_rows(coll)}
    bg, fg = rows["on_Snapshot__10_slow.bg.py"], rows["on_Snapshot__40_sleepy.sh"]
    # step 4's foreground hook started while the step-1 background hook ran, and outlived it
    assert db_time(fg["started_at"]) < db_time(bg["ended_at"]) < db_time(fg["ended_at"])
    assert 1.0 <= db_time(bg["ended_at"]) - db_time(bg["started_at"]) < 1.0 + 0.5 + 1.0  # timeout + grace + slack
    assert bg["exit_code"] == -15 and bg["reason"] == "timed out after 1s"


def test_a_first_step_of_only_background_hooks_does_not_wait_for_the_snapshots_next_check(tmp_path):
    """Step 0 holds one background hook and nothing else: the snapshot moves on to step 1 at once,
    not at its next check (SIDEEFFECT_LOST_AFTER, set far away here)."""
    coll = collection(tmp_path, "h_bgfirst", SIDEEFFECT_LOST_AFTER="120", HOOK_KILL_GRACE="0.5")
    url = "https://example.com/bg-first"
    coll.cli("add", url)
    got = results(coll)
    assert got[(url, "on_Snapshot__10_after.sh")]["status"] == "succeeded"
    # stopped at the snapshot's cleanup, by SIGTERM, without a record: not a failure
    assert got[(url, "on_Snapshot__00_first.bg.sh")]["status"] == "noresults"
    rows = {r["label"].split("/")[1]: r for r in hook_rows(coll)}
    assert rows["on_Snapshot__00_first.bg.sh"]["reason"] == "stopped at cleanup"
    first, after = rows["on_Snapshot__00_first.bg.sh"], rows["on_Snapshot__10_after.sh"]
    assert db_time(after["started_at"]) - db_time(first["started_at"]) < 60  # well before the 120 s check


def test_crawl_hooks_run_first_with_the_crawl_id_and_their_background_hook_lives_until_the_crawl_seals(tmp_path):
    coll = collection(tmp_path, "h_crawl", HOOK_KILL_GRACE="1")
    urls = ["https://example.com/crawl/1", "https://example.com/crawl/2"]
    try:
        run_with_pools(coll, *urls)
    finally:
        for daemon_file in (coll.root / "crawls").glob("*/h_crawl/daemon.json"):
            kill_quietly(json.loads(daemon_file.read_text())["pid"])
    crawl_id = coll.scalar("SELECT id FROM core_crawl")
    crawl_dir = next((coll.root / "crawls").iterdir())
    assert crawl_dir.name.replace("-", "") == crawl_id.replace("-", "")

    setup = json.loads((crawl_dir / "h_crawl" / "setup.json").read_text())
    # the crawl's first URL (as abx-dl gives CrawlSetup hooks), no --snapshot-id
    assert setup["argv"][1:] == [f"--url={urls[0]}", f"--crawl-id={crawl_dir.name}", "--depth=0"]
    assert setup["cwd"] == str(crawl_dir / "h_crawl") and setup["crawl_dir"] == setup["snap_dir"] == str(crawl_dir)
    daemon = json.loads((crawl_dir / "h_crawl" / "daemon.json").read_text())
    assert daemon["start"] >= setup["end"]  # step 1 after step 0
    term = float((crawl_dir / "h_crawl" / "daemon_term.txt").read_text())
    ready = json.loads((crawl_dir / "h_crawl" / "ready.json").read_text())
    assert setup["end"] <= ready["start"] < term  # step 2 ran while the step-1 background hook still ran
    assert daemon["start"] <= ready["start"]  # ...once that hook was ready (its first stdout line)

    snapshot_sealed = [db_time(r["finished_at"]) for r in coll.query("SELECT finished_at FROM core_snapshot")]
    for url in urls:
        seen = json.loads((snapshot_dir(coll, url) / "h_crawl" / "seen.json").read_text())
        assert seen["start"] > setup["end"]          # crawl hooks ran before the crawl's snapshots
        assert seen["daemon_alive"] is True          # the crawl's background hook was running
    assert term >= max(snapshot_sealed)              # and was stopped only once the snapshots were done
    assert term < db_time(coll.scalar("SELECT finished_at FROM core_crawl"))  # at the crawl's cleanup, before it sealed

    crawl_results = {r["hook_name"]: dict(r) for r in coll.query(
        "SELECT hook_name, status, output_str, step, background FROM core_archiveresult WHERE snapshot_id IS NULL")}
    assert crawl_results["on_Crawl__00_setup.py"]["status"] == "succeeded"
    assert crawl_results["on_Crawl__20_ready.py"]["status"] == "succeeded"
    assert crawl_results["on_Crawl__10_daemon.daemon.bg.py"]["status"] == "succeeded"
    assert crawl_results["on_Crawl__10_daemon.daemon.bg.py"]["output_str"] == "daemon stopped at the crawl's cleanup"
    assert pid_dead(daemon["pid"])
    assert {r["hook_name"] for r in coll.query("SELECT hook_name FROM core_archiveresult WHERE snapshot_id IS NOT NULL")} == {"on_Snapshot__10_snap.py"}
    rows = {r["label"].split("/")[1]: r for r in hook_rows(coll)}
    assert rows["on_Crawl__10_daemon.daemon.bg.py"]["reason"] == "stopped at cleanup"


def test_an_owner_waiting_for_its_background_hook_to_launch_looks_again_soon(tmp_path, use_plugins, monkeypatch):
    """In-process, tick by tick: a crawl whose step 1 holds only a background hook, ticked before that hook's
    result started, must not sleep long once the hook is launched (it used to wait a fixed 30 s)."""
    (tmp_path / "h_last").mkdir()
    (tmp_path / "h_last" / "on_Crawl__00_first.sh").write_text("echo '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}'\n")
    (tmp_path / "h_last" / "on_Crawl__10_only.bg.sh").write_text("sleep 60\n")
    monkeypatch.setattr(settings, "PLUGIN_DIRS", str(tmp_path))
    use_plugins("h_last")
    now = timezone.now()
    crawl = Crawl.objects.create(urls="https://example.com/recheck", status="started", current_step=1, started_at=now, retry_at=now)
    ArchiveResult.objects.create(crawl=crawl, plugin="h_last", hook_name="on_Crawl__00_first.sh", step=0, status="succeeded", retry_at=None)
    only = ArchiveResult.objects.create(crawl=crawl, plugin="h_last", hook_name="on_Crawl__10_only.bg.sh", step=1,
                                        background=True, status="queued", retry_at=now)
    config = engine_config()
    run_tick(actor_registry.get("Crawl"), crawl.pk, None, config, now=now)
    crawl.refresh_from_db()
    assert crawl.current_step == 1  # waiting for its step-1 background hook to launch
    run_tick(actor_registry.get("ArchiveResult"), only.pk, None, config, now=now)
    only.refresh_from_db()
    assert only.status == "started"
    crawl.refresh_from_db()
    # the background hook is launched: nothing is left to wait for, so the crawl looks again soon
    assert crawl.retry_at <= now + dt.timedelta(seconds=config.sideeffect_lost_after), crawl.retry_at - now


def test_a_finite_background_hook_is_awaited_before_its_snapshot_seals(tmp_path):
    """A ``.finite.bg`` hook (an extractor such as wget in abx-plugins) does not hold back
    later steps, but its snapshot waits for it instead of stopping it at seal."""
    coll = collection(tmp_path, "h_finite")
    coll.cli("add", "https://example.com/finite")
    got = {r["hook_name"]: r for r in coll.query("SELECT hook_name, status, output_str, finished_at FROM core_archiveresult")}
    assert (got["on_Snapshot__10_long.finite.bg.sh"]["status"], got["on_Snapshot__10_long.finite.bg.sh"]["output_str"]) == \
        ("succeeded", "finished in the background")
    assert got["on_Snapshot__20_quick.sh"]["finished_at"] < got["on_Snapshot__10_long.finite.bg.sh"]["finished_at"]
    assert coll.counts("snapshot") == {"sealed": 1}
