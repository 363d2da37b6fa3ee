"""Both worker pools inside the current process: the embedded default, no server needed.

``archivebox add`` (foreground) and ``archivebox worker`` use this. It runs the same
Huey consumers that ``huey_consumer`` would, as threads of this process. The first
SIGINT or SIGTERM stops them gracefully (running hooks are stopped and recorded); a
second one kills this process's hooks and exits at once.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable

from archivebox.broker import shutting_down
from archivebox.sideeffects import pool as sideeffects_pool
from archivebox.tasks import pool as ticks_pool

logger = logging.getLogger(__name__)


class Interrupted(Exception):
    """The user asked to stop (SIGINT/SIGTERM)."""


class EmbeddedWorkers:
    def __init__(self, tick_workers: int = 4, sideeffect_workers: int = 8):
        self.consumers = [
            ticks_pool.huey.create_consumer(workers=tick_workers, periodic=True, check_worker_health=True),
            sideeffects_pool.huey.create_consumer(workers=sideeffect_workers, periodic=False, check_worker_health=True),
        ]
        self.stop_requested = threading.Event()
        self._signals = 0
        self._started = False

    def start(self) -> None:
        for consumer in self.consumers:
            consumer.start()
        self._started = True
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        self.tend()

    def _on_signal(self, signum, frame) -> None:
        self._signals += 1
        shutting_down.set()
        self.stop_requested.set()
        if self._signals > 1:
            logger.warning("second signal: stopping at once")
            raise KeyboardInterrupt

    def tend(self) -> None:
        """Heartbeats, sweeps and worker health: call this every fraction of a second."""
        for consumer in self.consumers:
            for listener in consumer.listeners:
                listener.on_loop()

    def run_until(self, done: Callable[[], bool], on_progress: Callable[[], None] = lambda: None, poll: float = 0.25) -> bool:
        """Tend the pools until ``done()``; False if a signal stopped us first."""
        next_health = time.monotonic() + 10
        while not done():
            if self.stop_requested.wait(poll):
                return False
            self.tend()
            on_progress()
            if time.monotonic() >= next_health:
                next_health = time.monotonic() + 10
                for consumer in self.consumers:
                    consumer.check_worker_health()
        return True

    def stop(self, graceful: bool = True) -> None:
        if not self._started:
            return
        self._started = False
        shutting_down.set()
        for consumer in self.consumers:
            consumer.stop_flag.set()
            consumer.huey.wake_consumers()
        for consumer in self.consumers:
            consumer.stop(graceful=graceful)
