"""What every consumer process of the project does besides running tasks.

On start it registers its Process row and sweeps what dead workers of this machine left
behind; while running it heartbeats and sweeps periodically; on stop it closes its row.
A pool that runs hooks passes its hook runner's ``sweep`` and ``stop`` (see
:mod:`archivebox.pools`): this layer knows Process rows, not hooks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections

from archivebox.core import diskspace
from archivebox.core.models import Machine
from archivebox.process import forkclient, registry
from archivebox.process.browser import BROWSER
from archivebox.process.sweep import sweep_workers

logger = logging.getLogger(__name__)


class WorkerListener:
    def __init__(self, consumer, pool: str, sweep: Callable[[Machine, float, int], int] | None = None,
                 stop: Callable[[object, bool], None] | None = None):
        self.consumer = consumer
        self.pool = pool
        self.sweep_hooks = sweep
        self.stop_hooks = stop
        self.config = settings.ENGINE
        self.row = None
        self.machine = None
        self._next_heartbeat = 0.0
        self._next_sweep = 0.0

    def on_start(self) -> None:
        self.machine = Machine.current(self.config.machine_id)
        self.row = registry.register_worker(self.machine, f"{self.pool} pool ({self.consumer.workers} workers)",
                                           self.config.heartbeat_ttl, pool=self.pool)
        if self.stop_hooks is not None:
            BROWSER.reopen()  # a pool that runs hooks shares a browser among them
        self._sweep()
        now = time.monotonic()
        self._next_heartbeat = now + self.config.heartbeat_interval
        self._next_sweep = now + self.config.sweep_interval
        logger.info("%s pool started: pid %s, %s workers, machine %s", self.pool, os.getpid(), self.consumer.workers, self.machine)

    def on_loop(self) -> None:
        now = time.monotonic()
        try:
            if now >= self._next_heartbeat:
                self._next_heartbeat = now + self.config.heartbeat_interval
                if not registry.heartbeat(self.row, self.config.heartbeat_ttl):
                    logger.warning("%s pool: its Process row was closed by the loop; registering again", self.pool)
                    self.row = registry.register_worker(self.machine, self.row.label, self.config.heartbeat_ttl, pool=self.pool)
                diskspace.recovered()  # a heartbeat is a write: if it went through, so will others
            if now >= self._next_sweep:
                self._next_sweep = now + self.config.sweep_interval
                self._sweep()
        except Exception as err:
            if diskspace.is_disk_full(err):
                diskspace.report(f"the {self.pool} pool", self.config.data_dir)
            else:
                logger.exception("%s pool: heartbeat or sweep failed", self.pool)
            close_old_connections()

    def on_stop(self, graceful: bool) -> None:
        """Close this worker's row; hooks still running now (a second signal cut the graceful
        stop short) are killed, so none outlives its worker. On a full disk each step still
        runs (the processes are stopped); rows left unwritten are the next sweep's to close."""
        if self.row is None:
            return
        if self.stop_hooks is not None:
            with self._heartbeating():  # hooks may take HOOK_STOP_GRACE and more to wind down
                self._despite_full_disk(lambda: self.stop_hooks(self.row, graceful))
            self._despite_full_disk(BROWSER.stop)
        self._despite_full_disk(forkclient.stop_all)
        self._despite_full_disk(lambda: registry.close_worker(self.row, "stopped"))
        logger.info("%s pool stopped", self.pool)

    def _despite_full_disk(self, step: Callable[[], object]) -> None:
        try:
            step()
        except DatabaseError as err:
            if not diskspace.is_disk_full(err):
                raise
            diskspace.report(f"the {self.pool} pool, stopping", self.config.data_dir)

    @contextlib.contextmanager
    def _heartbeating(self):
        """Heartbeats from a thread of their own while the consumer's loop no longer runs."""
        done = threading.Event()

        def beat() -> None:
            try:
                while not done.wait(self.config.heartbeat_interval):
                    registry.heartbeat(self.row, self.config.heartbeat_ttl)
            except Exception as err:
                if diskspace.is_disk_full(err):
                    diskspace.report(f"the {self.pool} pool, stopping", self.config.data_dir)
                else:
                    logger.exception("%s pool: heartbeat while stopping failed", self.pool)
            finally:
                connections.close_all()

        thread = threading.Thread(target=beat, name=f"{self.pool}-stop-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _sweep(self) -> None:
        closed = sweep_workers(self.machine, exclude_pid=os.getpid())
        if self.sweep_hooks is not None:
            closed += self.sweep_hooks(self.machine, self.config.hook_kill_grace, os.getpid())
        if closed:
            logger.warning("%s pool: closed %d Process rows left by dead workers", self.pool, closed)


def listener_for(pool: str, sweep=None, stop=None):
    return lambda consumer: WorkerListener(consumer, pool, sweep, stop)
