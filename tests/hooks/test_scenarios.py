"""The issue's explicit scenarios, end to end with real sh and Python hook scripts.

(Garbage on stdout, 100 MB on stdout and records pointing outside their folder are in
``test_output.py``; a .bg hook still running at seal is in ``test_running.py``.)
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from .util import collection, db_time, hook_rows, kill_quietly, pid_dead, results, snapshot_dir, wait_until

NASTY_URLS = [
    "https://example.com/a;b&c|d$(id)`*?<>'\"\\!",
    "https://example.com/$HOME/~/{a,b}/%20%0A/--url=x?q=1&r=$(touch${IFS}/tmp/pwned)&s=;touch${IFS}/tmp/pwned;#frag",
    "https://example.com/ünï/日本?q=é&x=`id`",
]


def test_a_hook_that_hangs_and_forks_leaves_no_descendant_after_its_timeout(tmp_path):
    coll = collection(tmp_path, "h_hang", H_HANG_TIMEOUT="2", HOOK_MAX_ATTEMPTS="1", HOOK_KILL_GRACE="0.5")
    url = "https://example.com/hang"
    family: dict[str, int] = {}
    try:
        coll.cli("add", url, check=False)
        folder = snapshot_dir(coll, url) / "h_hang"
        assert (folder / "ready").exists(), "the hook did not get to record its descendants"
        family = {kind: int(pid) for kind, pid in (line.split() for line in (folder / "descendants.txt").read_text().splitlines())}
        assert set(family) == {"hook", "child", "grandchild", "escaped", "daemon"}
        survivors = {kind: pid for kind, pid in family.items() if not pid_dead(pid)}
        assert survivors == {}, f"descendants alive after the timeout: {survivors}"
        [row] = hook_rows(coll)
        assert (row["reason"], row["exit_code"]) == ("timed out after 2s", -15)
        [result] = coll.list_json()[0]["results"]
        assert result["status"] == "failed" and result["output_str"] == "timed out after 2s (gave up after 1 attempts)"
    finally:
        kill_quietly(*family.values())


def test_a_hook_that_fails_once_then_succeeds_on_retry(tmp_path):
    coll = collection(tmp_path, "h_flaky", HOOK_MAX_ATTEMPTS="3", HOOK_RETRY_BACKOFF="0.3")
    url = "https://example.com/flaky"
    coll.cli("add", url)
    [snapshot] = coll.list_json()
    [result] = snapshot["results"]
    assert (result["status"], result["output_str"], result["attempts"]) == ("succeeded", "second time lucky", 2)
    assert json.loads(coll.scalar("SELECT output_json FROM core_archiveresult")) == {"attempt": 2}
    assert snapshot["tags"] == ["first-attempt"]  # kept from the attempt that failed
    rows = hook_rows(coll)
    assert [(r["attempt"], r["exit_code"]) for r in rows] == [(1, 1), (2, 0)]
    assert Path(rows[0]["stderr_path"]).read_text() == "transient failure\n"
    assert db_time(rows[1]["started_at"]) - db_time(rows[0]["ended_at"]) >= 0.9 * 0.3
    assert snapshot["status"] == "sealed"


def test_a_url_full_of_shell_metacharacters_reaches_the_hook_byte_for_byte(tmp_path):
    coll = collection(tmp_path, "h_args")
    coll.cli("add", *NASTY_URLS)
    assert not Path("/tmp/pwned").exists()
    crawl_id = coll.scalar("SELECT crawl_id FROM core_snapshot LIMIT 1")
    for url in NASTY_URLS:
        folder = snapshot_dir(coll, url)
        expected = b"".join(arg.encode() + b"\0" for arg in (
            f"--url={url}", f"--snapshot-id={folder.name}", f"--crawl-id={_dashed(crawl_id)}", "--depth=0"))
        assert (folder / "h_args" / "argv_py.bin").read_bytes() == expected
        assert (folder / "h_args" / "argv_sh.bin").read_bytes() == expected
        for row in coll.query("SELECT cmd FROM core_process WHERE kind='hook' AND pwd=?", (str(folder / "h_args"),)):
            assert f"--url={url}" in json.loads(row["cmd"])
    assert {r["status"] for r in results(coll).values()} == {"succeeded"}


def _dashed(hex_id: str) -> str:
    return str(uuid.UUID(hex_id))


def test_a_hook_ignoring_sigterm_is_killed_with_sigkill_after_the_grace(tmp_path):
    coll = collection(tmp_path, "h_stubborn", H_STUBBORN_TIMEOUT="1", HOOK_KILL_GRACE="1", HOOK_MAX_ATTEMPTS="1")
    url = "https://example.com/stubborn"
    pids: list[int] = []
    try:
        coll.cli("add", url, check=False)
        folder = snapshot_dir(coll, url) / "h_stubborn"
        pids = [int(p) for p in (folder / "pids.txt").read_text().split()]
        terms = [float(t) for t in (folder / "term.txt").read_text().split()]
        [row] = hook_rows(coll)
        assert (row["exit_code"], row["reason"]) == (-9, "timed out after 1s")
        assert terms, "SIGTERM was never sent"
        # SIGTERM at the timeout, SIGKILL only after the grace
        assert db_time(row["ended_at"]) - terms[0] >= 1.0 - 0.1
        assert terms[0] - db_time(row["started_at"]) >= 1.0 - 0.1
        wait_until(lambda: all(pid_dead(pid) for pid in pids), timeout=5, message="the hook and its TERM-ignoring child dead")
        [result] = coll.list_json()[0]["results"]
        assert result["status"] == "failed" and result["output_str"] == "timed out after 1s (gave up after 1 attempts)"
    finally:
        kill_quietly(*pids)
