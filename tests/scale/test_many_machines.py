"""Many machines, one Postgres, one Redis: the work is shared, never done twice at once.

Three "machines" (a ticks consumer and a side-effects consumer per ``MACHINE_ID``, real
``huey_consumer`` processes) work on one collection. The tick audit (a lifecycle plugin)
records every tick's start and end, the orchestrator audit every leadership change, and
the ``scaleaudit`` hook every hook run: no row may be ticked by two ticks at once, no two
orchestrators may lead at once, no hook may run twice at once for one URL.
"""

from __future__ import annotations

import signal
import subprocess

from helpers import tick_overlaps, wait_until
from scaletools import (FAST_RECOVERY, ScaleCollection, audit_env, database_connections, hook_overlaps,
                        orchestrator_terms, overlapping_terms)

URLS = 60
MACHINES = ("m1", "m2", "m3")


def test_three_machines_share_the_work_without_overlap(tmp_path, database_url, redis_url):
    audit, orch_audit = tmp_path / "ticks.audit", tmp_path / "orchestrator.audit"
    collection = ScaleCollection(tmp_path / "data", database_url, redis_url, plugins="noop,titler,scaleaudit",
                                 extra_env={**FAST_RECOVERY, **audit_env(audit, orch_audit)}).init()
    collection.cli("add", "--bg", input="\n".join(f"https://example.com/page/{i}" for i in range(URLS)))
    machines = [collection.start_machine(name, ticks=2, sideeffects=4) for name in MACHINES]
    try:
        wait_until(lambda: collection.unfinished() == 0, timeout=120, interval=0.2, message="every row final")
        assert all(machine.alive() for machine in machines)
        # A ticks consumer holds one connection per worker thread, plus its orchestrator thread,
        # its main thread (heartbeats, sweeps) and the task monitor's writer: -w 2 -> at most 5.
        ticks_connections = [database_connections(machine.consumers[0].pid, database_url) for machine in machines]
        lease = collection.query("SELECT l.holder, m.guid FROM core_lease l JOIN core_machine m ON m.id = l.machine_id "
                                 "WHERE l.key = 'orchestrator'")
    finally:
        collection.stop_all(signal.SIGINT)
    assert [proc.returncode for proc in collection.consumers if proc.returncode] == []
    assert all(1 <= n <= 2 + 3 for n in ticks_connections), ticks_connections

    assert collection.counts("crawl") == {"sealed": 1}
    assert collection.counts("snapshot") == {"sealed": URLS}
    assert collection.counts("archiveresult") == {"succeeded": URLS * 3}
    assert collection.scalar("SELECT COUNT(*) FROM core_snapshot WHERE title = 'Title of ' || url") == URLS

    assert tick_overlaps(audit, {}) == []
    terms = orchestrator_terms(orch_audit, {})
    assert terms and overlapping_terms(terms) == []
    assert hook_overlaps(collection.root / "hook-audit.log", {}) == []
    hook_runs = [line for line in (collection.root / "hook-audit.log").read_text().splitlines() if line.startswith("hook-start")]
    assert len(hook_runs) == URLS  # no fault, so no retry: each hook ran once per URL

    # Every process names its machine, and the work was spread over all three.
    by_machine = {row["guid"]: row["n"] for row in collection.query(
        "SELECT m.guid, COUNT(*) AS n FROM core_process p JOIN core_machine m ON m.id = p.machine_id "
        "WHERE p.kind = 'hook' GROUP BY m.guid")}
    assert set(by_machine) == set(MACHINES), by_machine
    ticked_by = {line.split()[4] for line in audit.read_text().splitlines()}
    tick_pids = {str(machine.consumers[0].pid) for machine in machines}
    assert ticked_by <= tick_pids and len(ticked_by) >= 2
    # The orchestrator lease names the machine of the process that held it last.
    [row] = lease
    holder_pid = int(row["holder"].split(":")[1])
    assert row["guid"] == next(m.name for m in machines if m.consumers[0].pid == holder_pid)
    # Stopped gracefully: no worker row is left running.
    assert collection.counts("process") == {"exited": collection.scalar("SELECT COUNT(*) FROM core_process")}


PLANT_ROWS = """
import datetime as dt
from django.utils import timezone
from archivebox.core.models import Machine, Process
far = timezone.now() + dt.timedelta(hours=1)
result = {}
for guid in GUIDS:
    machine, _ = Machine.objects.get_or_create(guid=guid, defaults={"hostname": guid})
    # A worker that died without closing its row, and the hook it launched (both PIDs long gone).
    worker = Process.objects.create(kind="worker", machine=machine, status="running", pid=DEAD_PID, pid_started=1.0,
                                    label="sideeffects pool (4 workers)", retry_at=far, started_at=timezone.now())
    hook = Process.objects.create(kind="hook", machine=machine, status="running", pid=DEAD_PID, pid_started=1.0,
                                  parent=worker, label="planted/hook", retry_at=far, started_at=timezone.now())
    result[guid] = [str(worker.pk), str(hook.pk)]
"""


def dead_pid() -> int:
    """The PID of a process that has exited (and was reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_sweeps_touch_only_their_own_machine(tmp_path, database_url, redis_url):
    """A machine's sweep closes what its own dead workers left behind, and nothing of other machines'."""
    collection = ScaleCollection(tmp_path / "data", database_url, redis_url, plugins="noop",
                                 extra_env={**FAST_RECOVERY, "SWEEP_INTERVAL": "0.5"}).init()
    planted = collection.django(PLANT_ROWS.replace("GUIDS", repr(["m1", "elsewhere"])).replace("DEAD_PID", str(dead_pid())))
    status = lambda pk: collection.scalar("SELECT status FROM core_process WHERE id = %s", (pk,))  # noqa: E731
    collection.start_machine("m1", ticks=1, sideeffects=2)
    try:
        # The start-up sweep of m1 closes m1's leftovers...
        wait_until(lambda: all(status(pk) == "exited" for pk in planted["m1"]), timeout=60, message="m1's leftovers closed")
        # ...and its periodic sweeps go on: rows planted now are closed by a later sweep.
        later = collection.django(PLANT_ROWS.replace("GUIDS", repr(["m1"])).replace("DEAD_PID", str(dead_pid())))
        wait_until(lambda: all(status(pk) == "exited" for pk in later["m1"]), timeout=30, message="a periodic sweep of m1")
        # Meanwhile the rows of the other machine were left alone: only that machine can tell
        # whether its PIDs are alive (PIDs mean nothing across hosts).
        assert [status(pk) for pk in planted["elsewhere"]] == ["running", "running"]
        reasons = {row["reason"] for row in collection.query("SELECT reason FROM core_process WHERE label IN ('planted/hook')")}
        assert "gone: its worker died and it left no exit status" in reasons
    finally:
        collection.stop_all(signal.SIGINT)
