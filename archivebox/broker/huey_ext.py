"""Huey, adapted to this project: doorbell storage, graceful signals, worker bookkeeping.

The stock ``huey_consumer`` command runs our instances unchanged: it calls
``huey.create_consumer(**options)``, which returns an :class:`ArchiveboxConsumer`.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from huey import Huey, PriorityRedisExpireHuey
from huey.consumer import Consumer
from huey.storage import SqliteStorage

from archivebox.broker.doorbell import Doorbell

logger = logging.getLogger(__name__)

# Set when the consumer of this process begins to stop; long-running tasks (hook waiters,
# the orchestrator loop) watch it to release their work instead of being cut off.
shutting_down = threading.Event()


class DoorbellSqliteStorage(SqliteStorage):
    """SqliteHuey storage whose ``dequeue`` blocks on a :class:`Doorbell` instead of polling."""

    blocking = True

    def __init__(self, name="huey", filename="huey.db", doorbell_dir=None, wait_timeout=1.0, **kwargs):
        self.wait_timeout = wait_timeout
        self.bell = Doorbell(Path(doorbell_dir or Path(filename).parent / "run"), name)
        # The file and its tables are created on first use, not when the module is imported.
        super().__init__(name=name, filename=filename, create_tables=False, **kwargs)

    def _create_connection(self):
        Path(self.filename).parent.mkdir(parents=True, exist_ok=True)
        conn = super()._create_connection()
        # Queue messages are hints (the DB rows are the truth): WAL + NORMAL never corrupts
        # the file and avoids an fsync per message.
        conn.execute("pragma synchronous=NORMAL")
        for statement in self.ddl:
            conn.execute(statement)
        return conn

    def enqueue(self, data, priority=None):
        super().enqueue(data, priority)
        self.bell.ring()

    def dequeue(self):
        seen = self.bell.seq
        data = super().dequeue()
        if data is None and not shutting_down.is_set():
            self.bell.wait(seen, self.wait_timeout)
            data = super().dequeue()
        return data


class ArchiveboxHueyMixin:
    """Hands the stock consumer command our consumer class and lifecycle callbacks."""

    consumer_hooks: list[Callable[["ArchiveboxConsumer"], None]]

    def create_consumer(self, **options):
        return ArchiveboxConsumer(self, **options)

    def wake_consumers(self) -> None:
        bell = getattr(self.storage, "bell", None)
        if bell is not None:
            bell.wake_all()


class SqliteQueue(ArchiveboxHueyMixin, Huey):
    storage_class = DoorbellSqliteStorage


class RedisQueue(ArchiveboxHueyMixin, PriorityRedisExpireHuey):
    pass


class ArchiveboxConsumer(Consumer):
    """A Huey consumer whose SIGINT and SIGTERM both shut down gracefully.

    The first SIGINT or SIGTERM lets running tasks finish or release their work; a
    second one (either signal) exits at once. Startup/loop/stop callbacks registered
    in ``huey.consumer_hooks`` let the engine keep a heartbeat and sweep orphans.
    """

    def __init__(self, huey, **options):
        options.setdefault("workers", 1)
        super().__init__(huey, **options)
        self._graceful_sig = signal.SIGTERM
        self._signal_actions = {signal.SIGINT: (False, True), signal.SIGTERM: (False, True)}
        if hasattr(signal, "SIGHUP"):
            self._signal_actions[signal.SIGHUP] = (True, True)
        self.listeners = [factory(self) for factory in getattr(huey, "consumer_hooks", [])]

    def start(self):
        shutting_down.clear()
        for listener in self.listeners:
            listener.on_start()
        super().start()

    def loop(self, health_check_ts=None):
        result = super().loop(health_check_ts)
        for listener in self.listeners:
            listener.on_loop()
        return result

    def stop(self, graceful=False):
        shutting_down.set()
        self.huey.wake_consumers()
        try:
            super().stop(graceful=graceful)
        finally:
            for listener in self.listeners:
                listener.on_stop(graceful)

    def _handle_signal(self, signum, frame):
        self._signum = signum
        self._restart, self._graceful = self._signal_actions[signum]
        if self._graceful and not self._restart:
            shutting_down.set()
            self.huey.wake_consumers()
            # A second SIGINT or SIGTERM interrupts the graceful shutdown.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.default_int_handler)


def build_huey(name: str, queue_dir: Path, redis_url: str = "") -> Huey:
    """One queue of the project: Redis when ``redis_url`` is set, else SQLite in ``queue_dir``."""
    common = dict(results=False, store_none=False, utc=True, immediate=False)
    if redis_url:
        huey = RedisQueue(name, url=redis_url, read_timeout=1, **common)
    else:
        huey = SqliteQueue(
            name,
            filename=str(queue_dir / f"{name}.sqlite3"),
            doorbell_dir=str(queue_dir / "run"),
            timeout=60,
            **common,
        )
    huey.consumer_hooks = []
    return huey
