"""Threads that are reused, so their database connections are too.

Hook supervisors and trailing index writes each need a thread of their own for a while
(a supervised hook may run for hours). A new thread per job also meant a new database
connection per job: on SQLite about 0.6 ms of CPU to open and set up, paid on the path
of every hook run. A :class:`ThreadPool` hands each job to an idle thread at once, or
starts a thread when none is idle; with a ``limit``, jobs beyond it wait their turn (in
order) for a thread to finish. A thread that stays idle for ``idle`` seconds closes its
connections and ends.

Why not ``concurrent.futures.ThreadPoolExecutor``: its threads are joined when the
interpreter exits (since Python 3.9 they are not daemon threads), so a worker that stops
would wait for every hook supervisor still running, however long its hook runs, instead
of leaving the hook to the sweep that adopts it; its idle threads never end, each
keeping its connection; and closing the connection after every job instead costs what
archivebox.tuning (4) says. Its threads here are daemon threads.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from django.conf import settings
from django.db import connections

from archivebox.core import diskspace

logger = logging.getLogger(__name__)

IDLE = 30.0


class _Thread:
    """One pooled thread: waits on its own event for the next job handed to it."""

    __slots__ = ("job", "ready")

    def __init__(self, job: Callable[[], None]):
        self.job: Callable[[], None] | None = job
        self.ready = threading.Event()


class ThreadPool:
    def __init__(self, name: str, idle: float = IDLE, limit: int | None = None):
        self.name = name
        self.idle = idle
        self.limit = limit
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._idle: list[_Thread] = []
        self._backlog: deque[Callable[[], None]] = deque()
        self._busy = 0
        self._alive = 0
        self._started = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job()`` in a pooled thread (now, unless ``limit`` threads are busy); its
        exceptions are logged, never raised here."""
        with self._lock:
            self._busy += 1
            if self._idle:
                thread = self._idle.pop()
                thread.job = job
                thread.ready.set()
                return
            if self.limit is not None and self._alive >= self.limit:
                self._backlog.append(job)
                return
            self._alive += 1
            self._started += 1
            number = self._started
        pooled = _Thread(job)
        try:
            threading.Thread(target=self._run, args=(pooled,), name=f"{self.name}-{number}", daemon=True).start()
        except BaseException:
            with self._lock:
                self._busy -= 1
                self._alive -= 1
                self._done.notify_all()
            raise

    def busy(self) -> int:
        """How many jobs are running or waiting their turn."""
        with self._lock:
            return self._busy

    def join(self, timeout: float) -> int:
        """Wait (up to ``timeout``) until no job runs or waits; returns how many are left."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._busy and (remaining := deadline - time.monotonic()) > 0:
                self._done.wait(remaining)
            return self._busy

    def _run(self, pooled: _Thread) -> None:
        try:
            while pooled.job is not None:
                job, pooled.job = pooled.job, None
                try:
                    job()
                except BaseException as err:  # a job must not end the thread (it would stay listed as idle)
                    if diskspace.is_disk_full(err):
                        diskspace.report(f"a {self.name} job", settings.DATA_DIR)
                    else:
                        logger.exception("%s: a job failed", self.name)
                finally:
                    for conn in connections.all(initialized_only=True):
                        conn.close_if_unusable_or_obsolete()  # a broken connection is not reused
                    with self._lock:
                        self._busy -= 1
                        self._done.notify_all()
                        if self._backlog:
                            pooled.job = self._backlog.popleft()
                        else:
                            self._idle.append(pooled)
                if pooled.job is not None:
                    continue
                if not pooled.ready.wait(self.idle):
                    with self._lock:
                        if pooled in self._idle:  # nobody handed it a job meanwhile: end
                            self._idle.remove(pooled)
                            self._alive -= 1
                            return
                    pooled.ready.wait()  # a job was handed over just as the wait ended
                pooled.ready.clear()
        finally:
            connections.close_all()


class Timers:
    """Calls that run after a delay, in a :class:`ThreadPool`: one waiting thread in all
    instead of a new thread (and connection) per call, as ``threading.Timer`` would."""

    def __init__(self, pool: ThreadPool):
        self.pool = pool
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._due: list[tuple[float, int, Callable, tuple]] = []
        self._count = 0
        self._thread: threading.Thread | None = None

    def call_later(self, delay: float, function: Callable, *args) -> None:
        with self._lock:
            self._count += 1
            heapq.heappush(self._due, (time.monotonic() + delay, self._count, function, args))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self.pool.name}-timers", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._wake.wait(self._due[0][0] - time.monotonic() if self._due else None)
                _, _, function, args = heapq.heappop(self._due)
            self.pool.submit(lambda function=function, args=args: function(*args))
