"""The Process row of this worker process: registration, heartbeat, and its end.

A consumer registers itself on start, then bumps ``retry_at`` on every heartbeat; a
row whose heartbeat stops becomes due, and the reconciliation loop closes it. Hooks
this worker launches name it as their parent, so orphans can be recognised.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys

from django.utils import timezone

from archivebox.core.graphs import ProcessGraph
from archivebox.core.models import Machine, Process
from archivebox.process import runner
from archivebox.transitions.cas import move

logger = logging.getLogger(__name__)

_current: dict[int, Process] = {}
# Long-lived helpers of a worker, kept alive by its heartbeat: the fork server, the browser.
HELPERS = (Process.Kind.FORKSERVER, Process.Kind.BROWSER)


def register_worker(machine: Machine, label: str, heartbeat_ttl: float, pool: str = "") -> Process:
    """Create the running Process row for this OS process (a worker of ``pool``)."""
    now = timezone.now()
    row = Process.objects.create(
        kind=Process.Kind.WORKER, machine=machine, cmd=list(sys.argv), pwd=os.getcwd(), label=label, pool=pool,
        retry_at=now + dt.timedelta(seconds=heartbeat_ttl),
    )
    move(row, ProcessGraph.queued, ProcessGraph.running, now=now, retry_at=now + dt.timedelta(seconds=heartbeat_ttl),
         fields={"pid": os.getpid(), "pid_started": runner.start_time(os.getpid()), "started_at": now})
    _current[os.getpid()] = row
    return row


def current_worker() -> Process | None:
    """This process's worker row, if it registered one."""
    return _current.get(os.getpid())


def heartbeat(row: Process, heartbeat_ttl: float) -> bool:
    """Push the row's deadline forward, and its long-lived helpers' (:data:`HELPERS`), and
    mark its machine as seen now; False if the worker's row was closed meanwhile."""
    now = timezone.now()
    deadline = now + dt.timedelta(seconds=heartbeat_ttl)
    Process.objects.filter(parent=row, kind__in=HELPERS, status=ProcessGraph.running).update(retry_at=deadline, modified_at=now)
    Machine.objects.filter(pk=row.machine_id).update(last_seen=now)
    return bool(Process.objects.filter(pk=row.pk, status=ProcessGraph.running).update(retry_at=deadline, modified_at=now))


def close_worker(row: Process, reason: str) -> None:
    runner.finish(row, 0, reason)
    _current.pop(os.getpid(), None)
