"""What every consumer process of the project does besides running tasks.

On start it registers its Process row and sweeps what dead workers of this machine left
behind; while running it heartbeats and sweeps periodically; on stop it closes its row.
"""

from __future__ import annotations

import logging
import os
import time

from django.conf import settings
from django.db import close_old_connections

from archivebox.core.models import ArchiveResult, Machine, Process
from archivebox.process import forkclient, registry, runner
from archivebox.process.sweep import sweep_machine
from archivebox.sideeffects import hooks as hook_effects
from archivebox.sideeffects.wake import wake_rows

logger = logging.getLogger(__name__)


class WorkerListener:
    def __init__(self, consumer, pool: str):
        self.consumer = consumer
        self.pool = pool
        self.config = settings.ENGINE
        self.row = None
        self.machine = None
        self._next_heartbeat = 0.0
        self._next_sweep = 0.0

    def on_start(self) -> None:
        self.machine = Machine.current(self.config.machine_id)
        self.row = registry.register_worker(self.machine, f"{self.pool} pool ({self.consumer.workers} workers)", self.config.heartbeat_ttl)
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
                    self.row = registry.register_worker(self.machine, self.row.label, self.config.heartbeat_ttl)
            if now >= self._next_sweep:
                self._next_sweep = now + self.config.sweep_interval
                self._sweep()
        except Exception:
            logger.exception("%s pool: heartbeat or sweep failed", self.pool)
            close_old_connections()

    def on_stop(self, graceful: bool) -> None:
        """Close this worker's row; hooks still running now (a second signal cut the graceful
        stop short) are killed, so none outlives its worker."""
        if self.row is None:
            return
        try:
            left = hook_effects.SUPERVISORS.join(timeout=self.config.hook_kill_grace + 5 if graceful else 0.5)
        except KeyboardInterrupt:
            left = -1  # a second signal: stop waiting for the hooks to wind down
        if left:
            logger.warning("%s pool: hooks still running on the way out are killed", self.pool)
            hook_effects.SUPERVISORS.abandoned.set()
        for hook in Process.objects.filter(parent=self.row, status="running"):
            logger.warning("%s pool: killing %s (pid %s) on the way out", self.pool, hook.label, hook.pid)
            runner.kill_orphan(hook.pid, hook.pid_started, hook.pwd, grace=0.2)
            if runner.finish(hook, None, "killed: its worker stopped at once") and hook.archiveresult_id:
                wake_rows(ArchiveResult, [hook.archiveresult_id])
        forkclient.CLIENT.stop()
        registry.close_worker(self.row, "stopped")
        logger.info("%s pool stopped", self.pool)

    def _sweep(self) -> None:
        closed = sweep_machine(self.machine, self.config.hook_kill_grace, exclude_pid=os.getpid())
        if closed:
            logger.warning("%s pool: closed %d Process rows left by dead workers", self.pool, closed)


def listener_for(pool: str):
    return lambda consumer: WorkerListener(consumer, pool)
