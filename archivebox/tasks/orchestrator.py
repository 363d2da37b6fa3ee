"""The orchestrator: one per collection, finds due rows and dispatches their ticks.

Huey runs periodic tasks at most once a minute, far too coarse for a reconciliation
loop, so the periodic task ``orchestrate`` only makes sure this consumer process runs an
:class:`Orchestrator` loop in a background thread. Every tick consumer runs one; only
the holder of the expiring ``orchestrator`` lease scans, the others stand by and take
over within one lease TTL when the holder dies. The loop sleeps until the next row is
due (or ``ORCHESTRATOR_IDLE_POLL``), so it costs nothing while idle; rows that become
due *now* are dispatched at once by whoever made them due (see :mod:`dispatch`).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence

from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone
from huey import crontab

from archivebox.config import EngineConfig
from archivebox.core.models import Machine
from archivebox.core.models.base import StatefulModel
from archivebox.lifecycle import notify
from archivebox.core import diskspace, leases, rowsql
from archivebox.tasks import schedules
from archivebox.tasks.dispatch import dispatch_due
from archivebox.tasks.queue import huey
from archivebox.tasks.registry import ACTOR_TYPES, ActorType
from archivebox.tasks.ticks import HOLDER

logger = logging.getLogger(__name__)

# Sleep between passes while rows are being dispatched: a finishing batch passes its slot
# on by itself, so the scan only has to catch up with slots that came free otherwise.
BUSY_PAUSE = 0.02
# For this long after the last dispatch the loop looks again every ACTIVE_POLL seconds, so a
# retry_at that a tick wrote a moment ago (a backoff, a short wait) is not overslept.
ACTIVE_WINDOW = 10.0
ACTIVE_POLL = 0.05
# The shortest sleep before a row that is due soon: a timer's resolution, not a pause.
MIN_PAUSE = 0.001
# How often the leading orchestrator looks for schedules whose time has come.
SCHEDULE_CHECK_EVERY = dt.timedelta(seconds=1)


class Orchestrator:
    """The scan loop. ``run_single_cycle`` is one pass, so tests can drive it step by step."""

    def __init__(self, config: EngineConfig, actor_types: Sequence[ActorType], machine_id: int | None = None,
                 clock: Callable[[], dt.datetime] = timezone.now):
        self.config = config
        self.actor_types = list(actor_types)
        self.machine_id = machine_id
        self.clock = clock
        self.token = f"{HOLDER}:{uuid.uuid4().hex[:8]}"
        self.leading = False
        self._next_orphan_check: dt.datetime | None = None
        self._next_schedule_check: dt.datetime | None = None
        self._last_activity = float("-inf")

    def run_single_cycle(self, now: dt.datetime | None = None) -> float:
        """One pass. Returns how long to sleep before the next one."""
        now = now or self.clock()
        started = time.monotonic()
        if not leases.acquire(leases.ORCHESTRATOR, self.token, now, self.config.orchestrator_lease_ttl, self.machine_id):
            if self.leading:
                self.leading = False
                logger.warning("orchestrator %s lost its lease", self.token)
                notify("on_orchestrator_shutdown", orchestrator=self)
            return self.config.orchestrator_lease_ttl / 3
        if not self.leading:
            self.leading = True
            logger.info("orchestrator %s took the lease", self.token)
            notify("on_orchestrator_startup", orchestrator=self)
        notify("on_orchestrator_tick_started", orchestrator=self, actor_types=self.actor_types)
        if self._next_schedule_check is None or now >= self._next_schedule_check:
            self._next_schedule_check = now + SCHEDULE_CHECK_EVERY
            schedules.fire_due(now)
        results = [dispatch_due(actor, self.config, now) for actor in self.actor_types]
        self.check_orphans(now)
        if any(r.due for r in results):
            self._last_activity = time.monotonic()
        if any(r.dispatched for r in results):
            return BUSY_PAUSE
        next_due = self.next_due(now)
        if next_due is None and not any(r.due for r in results):
            notify("on_orchestrator_idle", orchestrator=self, actor_types=self.actor_types)
        # Measured from the end of this pass, so a slow pass does not make the loop wake late.
        return self.sleep_until(next_due, now + dt.timedelta(seconds=time.monotonic() - started))

    def sleep_until(self, next_due: dt.datetime | None, now: dt.datetime) -> float:
        cap = min(self.config.orchestrator_idle_poll, self.config.orchestrator_lease_ttl / 3)
        if time.monotonic() - self._last_activity < ACTIVE_WINDOW:
            cap = min(cap, ACTIVE_POLL)
        if next_due is None:
            return cap
        return max(MIN_PAUSE, min(cap, (next_due - now).total_seconds()))

    def next_due(self, now: dt.datetime) -> dt.datetime | None:
        """The earliest future ``retry_at`` among rows any actor type ticks."""
        upcoming = [rowsql.next_due(actor.model, actor.statuses, now) for actor in self.actor_types]
        return min((t for t in upcoming if t is not None), default=None)

    def check_orphans(self, now: dt.datetime) -> int:
        """Warn about due rows that no actor type will ever tick."""
        if self._next_orphan_check and now < self._next_orphan_check:
            return 0
        self._next_orphan_check = now + dt.timedelta(seconds=self.config.orphan_check_interval)
        claimed: dict[type, set[str]] = {}
        for actor in self.actor_types:
            if self.config.concurrency.get(actor.name, 1) > 0:
                claimed.setdefault(actor.model, set()).update(actor.statuses)
        total = 0
        for model in stateful_models():
            orphans = model.objects.filter(retry_at__lte=now).exclude(status__in=claimed.get(model, ()))
            count = orphans.count()
            if count:
                total += count
                logger.warning("%d due %s rows are claimed by no actor type and will never be processed (e.g. %s)",
                               count, model.__name__, list(orphans.values_list("pk", flat=True)[:3]))
        return total

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop`` is set; release the lease on the way out."""
        try:
            while not stop.is_set():
                try:
                    pause = self.run_single_cycle()
                except Exception as err:
                    if diskspace.is_disk_full(err):
                        diskspace.report("the orchestrator", self.config.data_dir)
                    else:
                        logger.exception("orchestrator pass failed")
                    close_old_connections()
                    pause = self.config.orchestrator_idle_poll
                stop.wait(pause)
        finally:
            if self.leading:
                try:
                    leases.release(leases.ORCHESTRATOR, self.token)
                except DatabaseError as err:  # the lease then expires on its own after its TTL
                    if not diskspace.is_disk_full(err):
                        raise
                    diskspace.report("the orchestrator, stopping", self.config.data_dir)
                self.leading = False
                notify("on_orchestrator_shutdown", orchestrator=self)


def stateful_models() -> list[type[StatefulModel]]:
    return [m for m in apps.get_app_config("core").get_models() if issubclass(m, StatefulModel)]


class OrchestratorThread:
    """Keeps one orchestrator loop alive in this process (see the module docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.orchestrator: Orchestrator | None = None

    def ensure_running(self, config: EngineConfig, actor_types: Sequence[ActorType], machine_id: int | None) -> bool:
        """Start the loop unless it already runs. Returns True when it (re)started it."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            self._stop = threading.Event()
            self.orchestrator = Orchestrator(config, actor_types, machine_id)
            self._thread = threading.Thread(target=self._run, args=(self.orchestrator, self._stop), name="orchestrator", daemon=True)
            self._thread.start()
            return True

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        if thread is not None:
            thread.join(timeout)

    @staticmethod
    def _run(orchestrator: Orchestrator, stop: threading.Event) -> None:
        try:
            orchestrator.run(stop)
        finally:
            connection.close()  # the thread's own connection: nothing else would close it


LOOP = OrchestratorThread()


class OrchestratorListener:
    """Starts a ticks consumer's orchestrator loop (standby unless it wins the lease).

    It starts on the consumer's first loop, once the workers run and the signal handlers
    are installed, so a signal can never find a dispatching orchestrator without them.
    """

    def __init__(self, consumer):
        self.consumer = consumer
        self.started = False

    def on_start(self) -> None:
        pass

    def on_loop(self) -> None:
        if not self.started:
            self.started = True
            start_in_this_process()

    def on_stop(self, graceful: bool) -> None:
        LOOP.stop()


def start_in_this_process() -> bool:
    """Called on consumer start and by the periodic task below."""
    config = settings.ENGINE
    return LOOP.ensure_running(config, list(ACTOR_TYPES.values()), Machine.current(config.machine_id).pk)


@huey.periodic_task(crontab(), name="orchestrate")
def orchestrate() -> None:
    """Once a minute, on every tick consumer: make sure the orchestrator loop is alive here."""
    if start_in_this_process():
        # On a consumer's first minute this is its start; later, the loop had stopped (logged where it did).
        logger.info("orchestrator loop started in this consumer")
