"""A lifecycle plugin for the scale-out tests: appends orchestrator leadership events to ``$ORCH_AUDIT_FILE``.

Lines: ``orch-start <ts> <pid>`` when a process takes the orchestrator lease,
``orch-pass <ts> <pid>`` for each scan pass of the leader, ``orch-stop <ts> <pid>`` when it
releases or loses the lease. Used with tests/fixtures/audit_plugin.py (tick starts/ends),
written the same way: one ``write`` per line on an O_APPEND descriptor.
"""

import os
import time

from archivebox.lifecycle import hookimpl


def _append(kind: str) -> None:
    fd = os.open(os.environ["ORCH_AUDIT_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{kind} {time.time():.6f} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


@hookimpl
def on_orchestrator_startup(orchestrator):
    _append("orch-start")


@hookimpl
def on_orchestrator_tick_started(orchestrator, actor_types):
    _append("orch-pass")


@hookimpl
def on_orchestrator_shutdown(orchestrator):
    _append("orch-stop")
