"""The two worker pools: entry points for ``huey_consumer``, and both in one process.

Run each pool with the stock consumer::

    huey_consumer archivebox.pools.ticks -w 4          # orchestrator + ticks
    huey_consumer archivebox.pools.sideeffects -w 16   # side effects: hook runs, index writes

Importing this module sets Django up (which registers every tick task and side effect,
see :mod:`archivebox.apps`) and gives each pool its consumer listeners: worker
bookkeeping for both, the orchestrator loop for the ticks pool, and for the side-effects
pool the hook runner's sweep (adopting what dead workers left) and its stop.

:class:`EmbeddedWorkers` runs both pools inside the current process: the embedded
default, no server needed (``archivebox add`` in the foreground, ``worker``, ``server``).
The first SIGINT or SIGTERM stops them gracefully (running hooks get a grace period,
then are stopped and recorded); a second one kills this process's hooks and exits at once.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable

from archivebox import boot

boot.setup()

from archivebox.broker.huey_ext import shutting_down  # noqa: E402 - after Django is set up
from archivebox.lifecycle import notify  # noqa: E402
from archivebox.process.worker import listener_for  # noqa: E402
from archivebox.sideeffects import hooks  # noqa: E402
from archivebox.sideeffects.queue import huey as sideeffects  # noqa: E402
from archivebox.tasks.orchestrator import OrchestratorListener  # noqa: E402
from archivebox.tasks.queue import huey as ticks  # noqa: E402
from archivebox.tasks.registry import ACTOR_TYPES  # noqa: E402

logger = logging.getLogger(__name__)

ticks.consumer_hooks[:] = [listener_for("ticks"), OrchestratorListener]
sideeffects.consumer_hooks[:] = [listener_for("sideeffects", sweep=hooks.sweep_hooks, stop=hooks.stop_hooks)]


@ticks.on_startup()
def actor_startup() -> None:
    """Each tick worker thread can run ticks of every actor type."""
    for actor_type in ACTOR_TYPES.values():
        notify("on_actor_startup", actor_type=actor_type, worker=threading.current_thread().name)


@ticks.on_shutdown()
def actor_shutdown() -> None:
    for actor_type in ACTOR_TYPES.values():
        notify("on_actor_shutdown", actor_type=actor_type, worker=threading.current_thread().name)


class Interrupted(Exception):
    """The user asked to stop (SIGINT/SIGTERM)."""


class EmbeddedWorkers:
    def __init__(self, tick_workers: int = 4, sideeffect_workers: int = 8):
        self.consumers = [
            ticks.create_consumer(workers=tick_workers, periodic=True, check_worker_health=True),
            sideeffects.create_consumer(workers=sideeffect_workers, periodic=False, check_worker_health=True),
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
        self.housekeeping()

    def _on_signal(self, signum, frame) -> None:
        self._signals += 1
        shutting_down.set()
        self.stop_requested.set()
        if self._signals > 1:
            logger.warning("second signal: stopping at once")
            raise KeyboardInterrupt

    def housekeeping(self) -> None:
        """Heartbeats, sweeps and worker health: call this every fraction of a second."""
        for consumer in self.consumers:
            for listener in consumer.listeners:
                listener.on_loop()

    def run_until(self, done: Callable[[], bool], on_progress: Callable[[], None] = lambda: None, poll: float = 0.25) -> bool:
        """Keep the pools' housekeeping going until ``done()``; False if a signal stopped us first."""
        next_health = time.monotonic() + 10
        while not done():
            if self.stop_requested.wait(poll):
                return False
            self.housekeeping()
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
