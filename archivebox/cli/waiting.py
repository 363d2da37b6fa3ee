"""Waiting for work the command asked for: with the pools running elsewhere, or in this process."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings

from archivebox.cli.progress import pools_alive
from archivebox.core.models import Machine
from archivebox.pools import EmbeddedWorkers

POLL = 0.25


def run_until(done: Callable[[], bool], tick_workers: int = 4, on_tick: Callable[[], None] = lambda: None) -> bool:
    """Block until ``done()``; run the pools here unless both already run. False if interrupted."""
    if pools_alive(Machine.current(settings.ENGINE.machine_id)):
        while not done():
            on_tick()
            time.sleep(POLL)
        return True
    workers = EmbeddedWorkers(tick_workers=tick_workers, sideeffect_workers=16)
    workers.start()
    try:
        return workers.run_until(done, on_tick)
    finally:
        workers.stop(graceful=True)
