"""Sweeping this machine's Process rows: close the rows of workers that are gone.

Runs when a worker starts and periodically after. It only ever touches Process rows
of its own machine, so many machines can sweep at once without stepping on each other.
Hook rows left by a dead worker are the hook runner's to close
(:func:`archivebox.sideeffects.hooks.sweep_hooks`); :func:`orphans` finds them.
"""

from __future__ import annotations

import logging

from archivebox.core.graphs import ProcessGraph
from archivebox.core.models import Machine, Process
from archivebox.process import runner

logger = logging.getLogger(__name__)


def owner_alive(row: Process) -> bool:
    """Is the worker that launched ``row`` still there? (Unknown owners count as alive.)"""
    parent = row.parent
    if parent is None:
        return True
    return parent.status == ProcessGraph.running and runner.is_running(parent.pid, parent.pid_started)


def sweep_workers(machine: Machine, exclude_pid: int | None = None) -> int:
    """Close the rows of this machine's workers (and their helpers) whose process is gone."""
    closed = 0
    rows = Process.objects.filter(machine=machine, status=ProcessGraph.running).exclude(kind=Process.Kind.HOOK).select_related("parent")
    for row in rows:
        if row.pid == exclude_pid:
            continue
        if row.kind == Process.Kind.BROWSER and owner_alive(row) and not runner.is_running(row.pid, row.pid_started):
            continue  # a live worker's browser that died: its worker records why, and replaces it
        if runner.is_running(row.pid, row.pid_started):
            if row.kind == Process.Kind.WORKER or owner_alive(row):
                continue
            logger.warning("killing orphaned %s (pid %s): its worker is gone", row.label, row.pid)
            if row.kind == Process.Kind.BROWSER:
                runner.kill_orphan(row.pid, row.pid_started, row.pwd, grace=1.0)  # Chromium's whole group
            else:
                runner.stop_one(row.pid, grace=1.0)  # not its children: a fork server's are hooks, adopted by their rows
        closed += runner.finish(row, None, "gone: worker exited without closing its row")
    return closed


def orphans(machine: Machine, status: str) -> list[Process]:
    """This machine's hook rows in ``status`` whose worker is gone or unknown."""
    rows = Process.objects.filter(machine=machine, status=status, kind=Process.Kind.HOOK).select_related("parent")
    return [row for row in rows if row.parent_id is None or not owner_alive(row)]
