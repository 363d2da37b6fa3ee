"""Waiting for work the command asked for: with the pools running elsewhere, or in this process."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings

from archivebox.cli.progress import pools_alive
from archivebox.core.models import Machine
from archivebox.pools import EmbeddedWorkers

POLL = 0.25


# While other pools do the work, how often a command checks that they are still there.
LIVENESS_EVERY = 1.0


def wait_on_others(done: Callable[[], bool], on_tick: Callable[[], None] = lambda: None, poll: float = POLL) -> bool:
    """Wait while pools elsewhere (another process, another machine) are alive: True once
    ``done()``, False as soon as they are not, or were not to begin with (a worker killed a
    moment ago still has a fresh heartbeat: on this machine its PID is checked too)."""
    machine = Machine.current(settings.ENGINE.machine_id)
    next_check = 0.0
    while not done():
        if time.monotonic() >= next_check:
            if not pools_alive(machine):
                return False
            next_check = time.monotonic() + LIVENESS_EVERY
        on_tick()
        time.sleep(poll)
    return True


def embedded_workers(tick_workers: int | None = None) -> EmbeddedWorkers:
    """Both pools for this process, sized as ``archivebox worker``'s: TICKS_WORKERS (or
    ``tick_workers``, a command's ``--workers``) and SIDEEFFECTS_WORKERS threads."""
    return EmbeddedWorkers(tick_workers=tick_workers or settings.ENGINE.ticks_workers,
                           sideeffect_workers=settings.ENGINE.sideeffects_workers)


def run_until(done: Callable[[], bool], tick_workers: int | None = None, on_tick: Callable[[], None] = lambda: None) -> bool:
    """Block until ``done()``: pools running elsewhere do the work while they stay alive;
    when there are none, or they go away meanwhile, they run here. False if interrupted."""
    if wait_on_others(done, on_tick):
        return True
    workers = embedded_workers(tick_workers)
    workers.start()
    try:
        return workers.run_until(done, on_tick)
    finally:
        workers.stop(graceful=True)
