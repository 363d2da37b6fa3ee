"""How a hook's exit turns into succeeded / failed / skipped / retry (with backoff, up to the attempt limit)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Process, Snapshot

from .util import collection, db_time, engine_config, make_snapshot, run_attempt, snapshot_dir, started_result, tick_result

MODES = ("succeeded", "failed", "skipped", "noresults", "norecord", "nonzero", "timeout", "killed", "nobinary", "saysfailed")
BACKOFF = 0.4


@pytest.fixture(scope="module")
def exits(tmp_path_factory):
    """One crawl, one snapshot per behaviour of the h_exit hook, run by a foreground ``add``."""
    coll = collection(tmp_path_factory.mktemp("exits"), "h_exit", HOOK_MAX_ATTEMPTS="3", HOOK_RETRY_BACKOFF=str(BACKOFF),
                      H_EXIT_TIMEOUT="1", HOOK_KILL_GRACE="0.5")
    coll.cli("add", *(f"https://example.com/exit/{mode}" for mode in MODES), check=False)
    rows = {}
    for row in coll.query("SELECT s.url, r.status, r.output_str, r.output_json, r.attempts, r.id FROM core_archiveresult r "
                          "JOIN core_snapshot s ON r.snapshot_id = s.id"):
        rows[row["url"].rsplit("/", 1)[1]] = dict(row, output_json=json.loads(row["output_json"]) if row["output_json"] else None)
    return coll, rows


def processes(coll, result_id) -> list[dict]:
    return [dict(r) for r in coll.query("SELECT attempt, exit_code, reason, started_at, ended_at FROM core_process "
                                        "WHERE archiveresult_id=? ORDER BY attempt", (result_id,))]


@pytest.mark.parametrize("mode, status", [("succeeded", "succeeded"), ("failed", "failed"), ("skipped", "skipped"),
                                          ("noresults", "noresults")])
def test_exit_0_takes_the_status_the_hook_reported_without_retrying(exits, mode, status):
    coll, rows = exits
    row = rows[mode]
    assert (row["status"], row["output_str"], row["output_json"], row["attempts"]) == (status, f"reported {mode}", {"mode": mode}, 1)
    assert [p["exit_code"] for p in processes(coll, row["id"])] == [0]


def test_exit_0_without_any_record_found_nothing_as_archivebox_records_it(exits):
    coll, rows = exits
    assert (rows["norecord"]["status"], rows["norecord"]["output_str"], rows["norecord"]["attempts"]) == ("noresults", "", 1)


@pytest.mark.parametrize("mode, why, code, kept", [
    ("nonzero", "crashing (exit code 3)", 3, {"partial": True, "attempt": 3}),  # its stderr's last line first
    ("timeout", "timed out after 1s", -15, {"hung": 3}),
    ("killed", "exit code -9", -9, {"killed": 3}),
])
def test_non_zero_timeout_and_killed_are_retried_up_to_the_limit_keeping_records_and_saying_why(exits, mode, why, code, kept):
    coll, rows = exits
    row = rows[mode]
    assert row["status"] == "failed" and row["attempts"] == 3
    assert row["output_str"] == f"{why} (gave up after 3 attempts)"
    assert row["output_json"] == kept  # what the last attempt reported before it failed
    runs = processes(coll, row["id"])
    assert [p["attempt"] for p in runs] == [1, 2, 3] and {p["exit_code"] for p in runs} == {code}
    lines = (snapshot_dir(coll, f"https://example.com/exit/{mode}") / "h_exit" / "attempts.log").read_text().splitlines()
    assert len(lines) == 3
    # retried with backoff: HOOK_RETRY_BACKOFF, then twice that (each +-10%)
    gaps = [db_time(runs[i + 1]["started_at"]) - db_time(runs[i]["ended_at"]) for i in range(2)]
    assert gaps[0] >= 0.9 * BACKOFF and gaps[1] >= 0.9 * 2 * BACKOFF, gaps
    assert gaps[0] < BACKOFF + 3 and gaps[1] < 2 * BACKOFF + 3, gaps


def test_a_missing_program_fails_once_with_what_the_hook_said(exits):
    coll, rows = exits
    row = rows["nobinary"]
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert row["output_str"] == "/bin/sh: 1: wget-not-installed: command not found (exit code 127)"


def test_a_failed_result_says_why_in_the_hooks_own_words(exits):
    coll, rows = exits
    row = rows["saysfailed"]
    assert (row["status"], row["attempts"]) == ("failed", 3)  # a network error is worth retrying
    assert row["output_str"] == "Name or service not known: example.invalid (exit code 1) (gave up after 3 attempts)"


def test_records_of_a_failed_attempt_are_applied_to_the_snapshot(exits):
    coll, _ = exits
    tags = [r[0] for r in coll.query("SELECT t.name FROM core_tag t JOIN core_snapshot_tags st ON st.tag_id = t.id "
                                     "JOIN core_snapshot s ON s.id = st.snapshot_id WHERE s.url LIKE '%/nonzero'")]
    assert tags == ["partial-tag"]


def test_one_failing_snapshot_does_not_stop_the_others(exits):
    coll, rows = exits
    assert set(rows) == set(MODES)
    assert coll.counts("snapshot") == {"sealed": len(MODES)} and coll.counts("crawl") == {"sealed": 1}


# The same decisions, tick by tick, in-process -----------------------------------------------

def test_a_failed_attempt_waits_out_its_backoff_in_queued_then_runs_again(use_plugins):
    use_plugins("h_exit")
    snapshot = make_snapshot("https://example.com/exit/nonzero")
    snapshot.current_step = 1
    snapshot.save(update_fields=["current_step"])
    result = started_result(snapshot, "h_exit", "on_Snapshot__10_exit.py")
    first = run_attempt(result)
    assert (first.exit_code, first.reason) == (3, "")
    config = engine_config(hook_max_attempts=2, hook_retry_backoff=10)
    now = timezone.now()
    after = tick_result(result, config, now=now)
    assert after.status == "queued" and after.attempts == 1
    assert after.output_str == "attempt 1 failed: crashing (exit code 3)" and after.output_json == {"partial": True, "attempt": 1}
    assert now + dt.timedelta(seconds=9) <= after.retry_at <= now + dt.timedelta(seconds=11)
    # when the backoff is over, the next tick starts attempt 2, whose Process row is a new one
    later = now + dt.timedelta(seconds=12)
    after = tick_result(after, config, now=later)
    assert after.status == "started" and after.attempts == 2
    second = run_attempt(after)
    assert second.pk != first.pk and second.attempt == 2 and second.key.endswith(":2")
    after = tick_result(after, config, now=later)
    assert after.status == "failed" and after.output_str == "crashing (exit code 3) (gave up after 2 attempts)"
    assert after.retry_at is None and after.output_json == {"partial": True, "attempt": 2}


def test_a_non_zero_exit_after_the_snapshot_sealed_fails_at_once(use_plugins):
    use_plugins("h_exit")
    snapshot = make_snapshot("https://example.com/exit/nonzero")
    result = started_result(snapshot, "h_exit", "on_Snapshot__10_exit.py")
    run_attempt(result)
    Snapshot.objects.filter(pk=snapshot.pk).update(status="sealed", retry_at=None)
    after = tick_result(result, engine_config(hook_max_attempts=5))
    assert (after.status, after.attempts, after.output_str) == ("failed", 1, "crashing (exit code 3)")


def test_a_hook_whose_script_vanished_fails_permanently(use_plugins):
    use_plugins("h_exit")
    snapshot = make_snapshot("https://example.com/exit/succeeded")
    result = started_result(snapshot, "h_exit", "on_Snapshot__99_gone.py")
    process = run_attempt(result)
    assert process.status == "exited" and process.cmd == [] and "no longer exists" in process.reason
    after = tick_result(result, engine_config(hook_max_attempts=5))
    assert after.status == "failed" and "h_exit/on_Snapshot__99_gone.py no longer exists" in after.output_str
    assert ArchiveResult.objects.get(pk=result.pk).attempts == 1
    assert Process.objects.filter(archiveresult=result).count() == 1
