"""Faults of the scale-out deployment, mid-run: Redis killed, Postgres restarted, a machine lost.

Three machines (real ``huey_consumer`` processes, distinct ``MACHINE_ID``\\s) archive one
crawl while the fault happens. Afterwards every row must reach a final state with no
manual step, no row may have been ticked by two ticks at once, no two orchestrators may
have led at once, and no hook may have run twice at once for one URL.
"""

from __future__ import annotations

import json
import signal
import time

import psutil

from helpers import tick_overlaps, wait_until
from scaletools import (FAST_RECOVERY, ScaleCollection, audit_env, hook_overlaps, orchestrator_terms,
                        overlapping_terms)

URLS = 45
MACHINES = ("m1", "m2", "m3")


def three_machines(tmp_path, database_url: str, redis_url: str, **env) -> ScaleCollection:
    collection = ScaleCollection(tmp_path / "data", database_url, redis_url, plugins="noop,titler,scaleaudit",
                                 extra_env={**FAST_RECOVERY, **audit_env(tmp_path / "ticks.audit", tmp_path / "orchestrator.audit"),
                                            "SCALEAUDIT_SECONDS": "0.3", **env}).init()
    collection.cli("add", "--bg", input="\n".join(f"https://example.com/page/{i}" for i in range(URLS)))
    for name in MACHINES:
        collection.start_machine(name, ticks=2, sideeffects=4)
    return collection


def succeeded(collection: ScaleCollection) -> int:
    try:
        return collection.counts("archiveresult").get("succeeded", 0)
    except Exception:  # noqa: BLE001 - the database may be restarting
        return 0


def mid_run(collection: ScaleCollection) -> None:
    """Wait until the run is well under way: some results done, hooks in flight."""
    wait_until(lambda: succeeded(collection) >= URLS // 2, timeout=90, interval=0.05, message="the run to get going")
    assert succeeded(collection) < URLS * 3, "the run finished before the fault: nothing was tested"


def check_outcome(collection: ScaleCollection, tmp_path, killed_at: dict[int, float], crawls: int = 1, urls: int = URLS) -> None:
    assert collection.counts("crawl") == {"sealed": crawls}
    assert collection.counts("snapshot") == {"sealed": urls}
    assert collection.counts("archiveresult") == {"succeeded": urls * 3}
    assert collection.scalar("SELECT COUNT(*) FROM core_snapshot WHERE title = 'Title of ' || url") == urls
    assert tick_overlaps(tmp_path / "ticks.audit", killed_at) == []
    terms = orchestrator_terms(tmp_path / "orchestrator.audit", killed_at)
    assert terms and overlapping_terms(terms) == []
    assert hook_overlaps(collection.root / "hook-audit.log", killed_at) == []


def consumers_alive(collection: ScaleCollection) -> list[int]:
    return [proc.pid for proc in collection.consumers if proc.poll() is not None]


def test_redis_killed_and_restarted_mid_run(tmp_path, database_url, private_redis):
    collection = three_machines(tmp_path, database_url, private_redis.url)
    try:
        mid_run(collection)
        private_redis.kill(signal.SIGKILL)  # every queued message is gone with it (nothing is persisted)
        wait_until(lambda: "Redis is unreachable" in collection.log_text(), timeout=30, message="the consumers to notice")
        private_redis.start()
        wait_until(lambda: collection.unfinished() == 0, timeout=150, interval=0.2, message="every row final")
        assert consumers_alive(collection) == []
        log = collection.log_text()
    finally:
        collection.stop_all(signal.SIGINT)
    check_outcome(collection, tmp_path, {})
    assert "Redis is reachable again" in log
    # The outage is one warning per queue and process, not a traceback per poll.
    assert "Error reading from queue" not in log


def test_postgres_restarted_mid_run(tmp_path, private_pg, redis_url):
    collection = three_machines(tmp_path, private_pg.create_database(), redis_url)
    try:
        mid_run(collection)
        private_pg.restart(signal.SIGQUIT)  # pg_ctl stop -m immediate, then start on the same port
        back_at = time.time()
        wait_until(lambda: collection.unfinished() == 0, timeout=150, interval=0.2, message="every row final")
        assert consumers_alive(collection) == []
        # Every connection of every process came back: heartbeats, the orchestrator, both pools.
        status = collection.cli("status", "--json")
        collection.cli("add", "--bg", "https://example.com/after-the-restart")
        wait_until(lambda: collection.unfinished() == 0, timeout=60, interval=0.1, message="a crawl added after the restart")
    finally:
        collection.stop_all(signal.SIGINT)
    report = json.loads(status.stdout)
    assert report["healthy"] and {len(report["pools"]["ticks"]), len(report["pools"]["sideeffects"])} == {3}
    # Every tick that started also ended, even those whose transaction could not begin.
    unended = unended_ticks(tmp_path / "ticks.audit")
    assert not unended, unended
    pids = {proc.pid for proc in collection.consumers}
    check_outcome(collection, tmp_path, {pid: back_at for pid in pids}, crawls=2, urls=URLS + 1)


def unended_ticks(audit) -> dict[tuple[str, str, int], float]:
    """Ticks with a start line and no end line: ``{(actor, pk, pid): start time}``."""
    open_ticks: dict[tuple[str, str, int], list[float]] = {}
    for line in audit.read_text().splitlines():
        kind, actor, pk, ts, pid = line.split()[:5]
        key = (actor, pk, int(pid))
        if kind == "start":
            open_ticks.setdefault(key, []).append(float(ts))
        elif open_ticks.get(key):
            open_ticks[key].pop()
    return {key: starts[0] for key, starts in open_ticks.items() if starts}


def test_machine_lost_mid_run(tmp_path, database_url, redis_url):
    """The machine leading the orchestrator dies with its hooks, for good: the others take over."""
    collection = three_machines(tmp_path, database_url, redis_url, SCALEAUDIT_SECONDS="1")
    killed_at: dict[int, float] = {}
    try:
        mid_run(collection)
        leader = leading_machine(collection)
        wait_until(lambda: hooks_in_flight(collection, leader), timeout=30, interval=0.02, message="hooks in flight on the leader")
        killed_at = leader.crash()
        crashed_at = max(killed_at.values())
        survivors = [m for m in collection.machines if m is not leader]
        wait_until(lambda: leading_machine(collection) in survivors, timeout=30, message="another orchestrator to take over")
        took_over = time.time() - crashed_at
        wait_until(lambda: collection.unfinished() == 0, timeout=150, interval=0.2, message="every row final")
        assert all(machine.alive() for machine in survivors)
    finally:
        collection.stop_all(signal.SIGINT)
    check_outcome(collection, tmp_path, killed_at)
    assert took_over < 2 * float(FAST_RECOVERY["ORCHESTRATOR_LEASE_TTL"]) + 2
    dead = collection.query("SELECT p.kind, p.status, p.reason FROM core_process p JOIN core_machine m ON m.id = p.machine_id "
                            "WHERE m.guid = %s AND p.pid = ANY(%s)", (leader.name, list(killed_at)))
    assert dead and all(row["status"] == "exited" for row in dead)
    # Nobody swept the dead machine's rows (its PIDs mean nothing elsewhere): the loop closed them
    # when their heartbeat or deadline passed.
    assert {row["reason"] for row in dead if row["kind"] == "worker"} == {"lost: heartbeat stopped"}
    assert {row["reason"] for row in dead if row["kind"] == "hook"} == {"lost: no exit recorded by its deadline"}


def test_machine_crashed_and_restarted_cleans_up_after_itself(tmp_path, database_url, redis_url):
    """A machine that comes back (same MACHINE_ID) closes its own leftovers at once, without waiting for deadlines."""
    collection = three_machines(tmp_path, database_url, redis_url, SCALEAUDIT_SECONDS="1")
    killed_at: dict[int, float] = {}
    victim = collection.machines[1]
    try:
        wait_until(lambda: hooks_in_flight(collection, victim), timeout=60, interval=0.02, message=f"hooks in flight on {victim.name}")
        killed_at = victim.crash()
        restarted = time.time()
        collection.start_machine(victim.name, ticks=2, sideeffects=4)
        wait_until(lambda: collection.unfinished() == 0, timeout=120, interval=0.2, message="every row final")
    finally:
        collection.stop_all(signal.SIGINT)
    check_outcome(collection, tmp_path, killed_at)
    leftovers = collection.query("SELECT p.kind, p.reason, EXTRACT(EPOCH FROM p.ended_at) AS ended FROM core_process p "
                                 "JOIN core_machine m ON m.id = p.machine_id WHERE m.guid = %s AND p.pid = ANY(%s)",
                                 (victim.name, list(killed_at)))
    hooks = [row for row in leftovers if row["kind"] == "hook"]
    assert hooks and {row["reason"] for row in hooks} == {"gone: its worker died and it left no exit status"}
    assert {row["reason"] for row in leftovers if row["kind"] == "worker"} <= {"gone: worker exited without closing its row",
                                                                                "lost: heartbeat stopped"}
    # Closed by the returning machine's start-up sweep, long before their deadline (TIMEOUT + 30 s).
    assert max(float(row["ended"]) for row in hooks) - restarted < 15


def hooks_in_flight(collection: ScaleCollection, machine) -> list[int]:
    """PIDs of ``scaleaudit`` hooks (1 s or so) that run on ``machine`` right now."""
    rows = collection.query("SELECT p.pid FROM core_process p JOIN core_machine m ON m.id = p.machine_id "
                            "WHERE m.guid = %s AND p.label LIKE 'scaleaudit/%%' AND p.status = 'running'", (machine.name,))
    return [row["pid"] for row in rows if row["pid"] and psutil.pid_exists(row["pid"])]


def leading_machine(collection: ScaleCollection):
    rows = collection.query("SELECT holder FROM core_lease WHERE key = 'orchestrator' AND expires_at > now() AND holder <> ''")
    if not rows:
        return None
    pid = int(rows[0]["holder"].split(":")[1])
    return next((m for m in collection.machines if m.consumers[0].pid == pid), None)
