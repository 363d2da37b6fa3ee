"""Sweeping this machine's processes: close rows whose process is gone, kill orphans.

Runs when a worker starts and periodically after. It only ever touches Process rows
of its own machine, so many machines can sweep at once without stepping on each other.
"""

from __future__ import annotations

import logging

from archivebox.core.models import ArchiveResult, Machine, Process
from archivebox.process import runner
from archivebox.sideeffects.wake import wake_rows

logger = logging.getLogger(__name__)


def owner_alive(row: Process) -> bool:
    """Is the worker that launched ``row`` still there? (Unknown owners count as alive.)"""
    parent = row.parent
    if parent is None:
        return True
    return parent.status == "running" and runner.is_running(parent.pid, parent.pid_started)


def sweep_machine(machine: Machine, grace: float = 3.0, exclude_pid: int | None = None) -> int:
    """Close or kill what this machine's dead workers left behind. Returns rows closed."""
    closed = 0
    for row in Process.objects.filter(machine=machine, status="queued", parent__isnull=False).select_related("parent"):
        if not owner_alive(row) and runner.close_unlaunched(row, "never launched: its worker was gone"):
            closed += 1
            if row.archiveresult_id:
                wake_rows(ArchiveResult, [row.archiveresult_id])
    # Hooks first: stopping a dead worker's fork server would take its hooks' leaders with
    # it, and a hook is swept by its group and .pid files, which need no leader.
    rows = Process.objects.filter(machine=machine, status="running").select_related("parent")
    for row in sorted(rows, key=lambda r: r.kind != Process.Kind.HOOK):
        if row.pid == exclude_pid:
            continue
        alive = runner.is_running(row.pid, row.pid_started)
        if row.kind == Process.Kind.WORKER:
            if not alive:
                closed += runner.finish(row, None, "gone: worker exited without closing its row")
            continue
        if row.parent_id is not None and owner_alive(row):
            continue  # its worker is alive and waiting on it: the worker records the end
        if alive and row.parent_id is None:
            continue  # nobody to ask; the Process row's own deadline closes it
        if alive:
            logger.warning("killing orphaned %s (pid %s): its worker is gone", row.label, row.pid)
            reason = "killed: its worker was gone"
        else:
            reason = "gone: no exit code was recorded"
        runner.kill_orphan(row.pid, row.pid_started, row.pwd, grace)  # and whatever it left running
        if runner.finish(row, None, reason):
            closed += 1
            if row.archiveresult_id:
                wake_rows(ArchiveResult, [row.archiveresult_id])
    return closed
