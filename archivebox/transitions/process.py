"""Transitions of a Process row that the reconciliation loop decides (lost processes).

Launching and reaping are written by the side effect that owns the subprocess (see
:mod:`archivebox.process.runner`); a tick only closes rows whose owner stopped
reporting: a launch that never happened, or a process nobody recorded the end of.
"""

from __future__ import annotations

import datetime as dt

from archivebox.core.models import Process
from archivebox.core.graphs import ProcessGraph
from archivebox.transitions.cas import move
from archivebox.transitions.effects import WakeProcessOwner


def transition_process_queued_to_exited(process: Process, *, now: dt.datetime, reason: str, claim=None) -> bool:
    return move(process, ProcessGraph.queued, ProcessGraph.exited, now=now, claim=claim, fields={"reason": reason[:255], "ended_at": now},
                then=[WakeProcessOwner(process.pk)])


def transition_process_running_to_exited(process: Process, *, now: dt.datetime, reason: str, claim=None) -> bool:
    return move(process, ProcessGraph.running, ProcessGraph.exited, now=now, claim=claim, fields={"reason": reason[:255], "ended_at": now, "exit_code": None},
                then=[WakeProcessOwner(process.pk)])


def transition_process_give_up(process: Process, *, now: dt.datetime, error: str, claim=None) -> bool:
    return move(process, process.status, ProcessGraph.exited, now=now, claim=claim, fields={"reason": error[:255], "ended_at": now},
                then=[WakeProcessOwner(process.pk)])
