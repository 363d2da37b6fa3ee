"""The task monitor's recorder: Huey signals of both queues, written off the hot path.

django-huey-monitor's own handler writes two rows and updates a third inside the worker
thread for every signal, and it listens only to djhuey's instance. Here each of our two
Huey instances (``ticks`` and ``sideeffects``) gets one receiver that only appends a
small record to an in-memory buffer; a background thread per process writes the buffer
in batches (two SQL statements per batch, whatever its size: :class:`archivebox.tuning.MonitorBatchSql`,
kept for its measured gain) into the monitor's tables, which live in their own SQLite file
when the app DB is SQLite (see :mod:`dbrouter`).

A task's row keeps its newest signal as its state: a batch never moves a task back to
an older signal, so the producer's late "enqueued" cannot overwrite a consumer's
"complete". Instead of the stock startup handler (which marks *every* executing task
"unknown", including tasks that live workers on other hosts are running), the flusher
marks only tasks whose last signal came from a process of this host that is gone.
"""

from __future__ import annotations

import atexit
import datetime as dt
import logging
import os
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psutil
from django.db import DatabaseError, connections, transaction
from huey_monitor.constants import ENDED_HUEY_SIGNALS
from huey_monitor.models import SignalInfoModel, TaskModel

from archivebox.tuning import MonitorBatchSql, random_uuid_int
from archivebox.web.dbrouter import monitor_db

logger = logging.getLogger(__name__)

SIGNAL_UNKNOWN = "unknown"
ENDED = frozenset(ENDED_HUEY_SIGNALS) | {SIGNAL_UNKNOWN}
# A process whose start time is later than its signal (plus this much) is a reused PID.
PID_START_TOLERANCE = 1.0


@dataclass(slots=True)
class Event:
    """One Huey signal as it happened; turned into rows by :func:`write_events`."""

    at: float
    signal: str
    task_id: str
    name: str
    thread: str
    pid: int
    exception_line: str = ""
    exception: str | None = None


def event_from_signal(queue: str, signal: str, task, exc: BaseException | None = None) -> Event:
    exception_line, exception = "", None
    if exc is not None:
        exception_line = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        exception = "".join(traceback.format_exception(exc))
    return Event(time.time(), signal, task.id, f"{queue}/{task.name}"[:128], threading.current_thread().name, os.getpid(),
                 exception_line, exception)


def _when(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)


def write_events(events: Sequence[Event], using: str, hostname: str) -> int:
    """Write a batch of events in one transaction; returns how many signal rows it added."""
    if not events:
        return 0
    sql = MonitorBatchSql(connections[using], TaskModel, SignalInfoModel)
    host = hostname[:128]
    firsts: dict[str, Event] = {}
    lasts: dict[str, tuple[Event, object]] = {}
    ended: set[str] = set()
    task_keys: dict[str, object] = {}
    signals = []
    for event in events:
        signal_id = sql.uuid(random_uuid_int())
        task_id = event.task_id
        key = task_keys.get(task_id)
        if key is None:
            key = task_keys[task_id] = sql.uuid(task_id)
            firsts[task_id] = event
        last = lasts.get(task_id)
        if last is None or event.at >= last[0].at:
            lasts[task_id] = (event, signal_id)
        if event.signal in ENDED:
            ended.add(task_id)
        signals.append((signal_id, host, event.pid, event.thread[:128], key, event.signal, event.exception_line, event.exception,
                        sql.when(event.at)))
    tasks = [(task_keys[task_id], first.name, sql.when(first.at), sql.when(lasts[task_id][0].at), lasts[task_id][1],
              task_id in ended) for task_id, first in firsts.items()]
    with transaction.atomic(using=using), sql.conn.cursor() as cursor:
        sql.run(cursor, sql.insert_signals, signals, sql.signal_defaults)
        sql.run(cursor, sql.upsert_tasks, tasks, sql.task_defaults)
    return len(signals)


def pid_is_gone(pid: int, since: dt.datetime) -> bool:
    """True if no process with ``pid`` runs, or the one that does started after ``since`` (a reused PID)."""
    try:
        started = psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return True
    except psutil.AccessDenied:
        return False
    return started > since.timestamp() + PID_START_TOLERANCE


def stale_executing(using: str, hostname: str) -> list[Event]:
    """'unknown' events for tasks left executing by processes of *this host* that are gone.

    Tasks executing on other hosts, and tasks of live processes here, are left alone.
    """
    rows = (TaskModel.objects.using(using)
            .filter(finished=False, state__signal_name="executing", state__hostname=hostname[:128])
            .values_list("task_id", "name", "state__pid", "state__create_dt"))
    now = time.time()
    return [Event(now, SIGNAL_UNKNOWN, str(task_id), name, "monitor", os.getpid(), f"worker pid {pid} on {hostname} is gone")
            for task_id, name, pid, since in rows if pid != os.getpid() and pid_is_gone(pid, since)]


class SignalRecorder:
    """Buffers signal events in memory and writes them from one background thread per process."""

    def __init__(self, flush_interval: float = 0.5, batch_size: int = 2000, max_buffered: int = 200_000,
                 stale_check_interval: float = 60.0, hostname: str | None = None):
        self.flush_interval = flush_interval
        self.batch_size = batch_size
        self.max_buffered = max_buffered
        self.stale_check_interval = stale_check_interval
        self.hostname = hostname or socket.gethostname()
        self.buffer: deque[Event] = deque()
        self.written = 0
        self.dropped = 0
        self.writer_cpu = 0.0  # CPU seconds the writer spent, for benchmarks
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._start_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._pid = 0
        self._thread: threading.Thread | None = None
        self._next_stale_check = 0.0
        self._warned = False
        self._atexit = False

    # The hot path --------------------------------------------------------------------

    def receiver(self, queue: str):
        """A Huey signal receiver for the queue named ``queue``."""
        def record_huey_signal(signal, task, *args):
            exc = args[0] if args and isinstance(args[0], BaseException) else None
            self.add(event_from_signal(queue, signal, task, exc))
        return record_huey_signal

    def add(self, event: Event) -> None:
        if self._pid != os.getpid():
            self._start()
        if len(self.buffer) >= self.max_buffered:
            self.dropped += 1
            return
        self.buffer.append(event)
        if len(self.buffer) >= self.batch_size:
            self._wake.set()

    # The writer ----------------------------------------------------------------------

    def _start(self) -> None:
        with self._start_lock:
            if self._pid == os.getpid():
                return
            # After a fork the buffer holds the parent's events: they are the parent's to write.
            self.buffer.clear()
            self._stop.clear()
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="task-monitor-writer", daemon=True)
            self._thread.start()
            if not self._atexit:
                self._atexit = True
                atexit.register(self.close)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            self.flush()
        connections.close_all()

    def flush(self) -> int:
        """Write everything buffered so far (and any stale executing tasks of this host)."""
        with self._flush_lock:
            started = time.thread_time()
            try:
                return self._flush()
            finally:
                self.writer_cpu += time.thread_time() - started

    def _flush(self) -> int:
        using = monitor_db()
        events = self._drain()
        try:
            if time.monotonic() >= self._next_stale_check:
                self._next_stale_check = time.monotonic() + self.stale_check_interval
                events += stale_executing(using, self.hostname)
            written = 0
            for start in range(0, len(events), self.batch_size):
                written += write_events(events[start:start + self.batch_size], using, self.hostname)
            self.written += written
            return written
        except DatabaseError as err:
            self.dropped += len(events)
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            hint = " (run `archivebox init` to create the monitor's tables)" if "no such table" in str(err) else ""
            logger.log(level, "task monitor: dropped %d signal(s), cannot write to database %r: %s%s", len(events), using, err, hint)
            connections[using].close()
            return 0

    def _drain(self) -> list[Event]:
        events = []
        while self.buffer:
            events.append(self.buffer.popleft())
        return events

    def close(self, timeout: float = 5.0) -> None:
        """Stop the writer thread and write what is left (registered with atexit)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._pid == os.getpid() and self.buffer:
            self.flush()


RECORDER = SignalRecorder()
_connected: set[int] = set()


def install(queues: Iterable[tuple[str, object]], recorder: SignalRecorder = RECORDER) -> None:
    """Connect ``recorder`` to each ``(name, huey)`` once, however often this is called."""
    for name, huey in queues:
        if id(huey) in _connected:
            continue
        _connected.add(id(huey))
        huey.signal()(recorder.receiver(name))
