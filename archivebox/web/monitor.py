"""The task monitor's recorder: Huey signals of both queues, written off the hot path.

django-huey-monitor's own handler writes two rows and updates a third inside the worker
thread for every signal, and it listens only to djhuey's instance. Here each of our two
Huey instances (``ticks`` and ``sideeffects``) gets one receiver that only appends a
small record to an in-memory buffer; a background thread per process writes the buffer
in batches (a few statements per batch, whatever its size) into the monitor's tables,
which live in their own SQLite file when the app DB is SQLite (see :mod:`dbrouter`).

A task's row keeps its newest signal as its state: a batch never moves a task back to
an older signal, so the producer's late "enqueued" cannot overwrite a consumer's
"complete". Instead of the stock startup handler (which marks *every* executing task
"unknown", including tasks that live workers on other hosts are running), the flusher
marks only tasks whose last signal came from a process of this host that is gone.
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import logging
import os
import random
import socket
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psutil
from django.db import DatabaseError, connections, transaction
from huey_monitor.constants import ENDED_HUEY_SIGNALS
from huey_monitor.models import SignalInfoModel, TaskModel

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


def _random_uuid_int() -> int:
    """A version-4 UUID as an int; signal ids need uniqueness, not unpredictability."""
    value = random.getrandbits(128)
    value &= ~(0xC000 << 48)
    value |= 0x8000 << 48
    value &= ~(0xF000 << 64)
    return value | (4 << 76)


class _Sql:
    """The two statements a batch needs, with values prepared the way the connection's backend stores them.

    The writer handles thousands of signals a second and must leave the CPU (and the GIL)
    to the workers: rows are plain tuples, never model instances, and on SQLite a whole
    batch goes in as one JSON parameter that SQLite unpacks itself (``json_each``), so
    Python binds two parameters per statement instead of ten per row.
    """

    TASK_COLUMNS = ("task_id", "name", "create_dt", "update_dt", "state_id", "finished")
    SIGNAL_COLUMNS = ("id", "hostname", "pid", "thread", "task_id", "signal_name", "exception_line", "exception", "create_dt")

    def __init__(self, using: str):
        self.conn = connections[using]
        self.sqlite = self.conn.vendor == "sqlite"
        self._seconds: dict[int, str] = {}
        q = self.conn.ops.quote_name
        task_table, signal_table = q(TaskModel._meta.db_table), q(SignalInfoModel._meta.db_table)
        self.task_defaults = self._defaults(TaskModel, self.TASK_COLUMNS)
        self.signal_defaults = self._defaults(SignalInfoModel, self.SIGNAL_COLUMNS)
        self.insert_signals = self._insert(signal_table, self.SIGNAL_COLUMNS, self.signal_defaults)
        # One upsert per task. A task only ever moves forward in time: an older signal (a
        # producer's "enqueued" written after the consumer's "complete") never replaces a
        # newer state, a finished task stays finished, and the earliest signal dates it.
        new, old = q("excluded"), task_table
        newer = f"{new}.{q('update_dt')} >= {old}.{q('update_dt')} OR {old}.{q('update_dt')} IS NULL"
        self.upsert_tasks = (
            self._insert(task_table, self.TASK_COLUMNS, self.task_defaults)
            + f" ON CONFLICT ({q('task_id')}) DO UPDATE SET"
            f" {q('state_id')} = CASE WHEN {newer} THEN {new}.{q('state_id')} ELSE {old}.{q('state_id')} END,"
            f" {q('update_dt')} = CASE WHEN {newer} THEN {new}.{q('update_dt')} ELSE {old}.{q('update_dt')} END,"
            f" {q('finished')} = ({old}.{q('finished')} OR {new}.{q('finished')}),"
            f" {q('create_dt')} = CASE WHEN {new}.{q('create_dt')} < {old}.{q('create_dt')}"
            f" THEN {new}.{q('create_dt')} ELSE {old}.{q('create_dt')} END"
        )

    def _defaults(self, model, dynamic: tuple[str, ...]) -> dict[str, object]:
        """Every other column gets its field's default, prepared once."""
        return {f.column: f.get_db_prep_save(f.get_default(), self.conn) for f in model._meta.concrete_fields if f.column not in dynamic}

    def _insert(self, table: str, columns: tuple[str, ...], defaults: dict) -> str:
        quote = self.conn.ops.quote_name
        names = ", ".join(quote(n) for n in (*columns, *defaults))
        if self.sqlite:
            # "WHERE true" keeps SQLite from reading a following ON CONFLICT as part of the SELECT.
            values = [f"json_extract(value, '$[{i}]')" for i in range(len(columns))] + ["%s"] * len(defaults)
            return f"INSERT INTO {table} ({names}) SELECT {', '.join(values)} FROM json_each(%s) WHERE true"
        return f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * (len(columns) + len(defaults)))})"

    def run(self, cursor, statement: str, rows: list[tuple], defaults: dict) -> None:
        if self.sqlite:
            cursor.execute(statement, [*defaults.values(), json.dumps(rows)])
        else:
            cursor.executemany(statement, [(*row, *defaults.values()) for row in rows])

    def uuid(self, value: str | int) -> object:
        if isinstance(value, int):
            return f"{value:032x}" if self.sqlite else uuid.UUID(int=value)
        return value.replace("-", "") if self.sqlite else uuid.UUID(value)

    def when(self, timestamp: float) -> object:
        if not self.sqlite:
            return _when(timestamp)
        # How Django's SQLite backend stores an aware datetime: naive UTC text. Signals of a
        # batch share their seconds, so the formatted second is reused.
        second = int(timestamp)
        prefix = self._seconds.get(second)
        if prefix is None:
            prefix = self._seconds[second] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second))
        return f"{prefix}.{int((timestamp - second) * 1_000_000):06d}"


def write_events(events: Sequence[Event], using: str, hostname: str) -> int:
    """Write a batch of events in one transaction; returns how many signal rows it added."""
    if not events:
        return 0
    sql = _Sql(using)
    host = hostname[:128]
    firsts: dict[str, Event] = {}
    lasts: dict[str, tuple[Event, object]] = {}
    ended: set[str] = set()
    task_keys: dict[str, object] = {}
    signals = []
    for event in events:
        signal_id = sql.uuid(_random_uuid_int())
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
            logger.log(level, "task monitor: dropped %d signal(s), cannot write to database %r: %s "
                       "(run `archivebox init` to create the monitor's tables)", len(events), using, err)
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
