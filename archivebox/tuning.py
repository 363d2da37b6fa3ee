"""The tricks the project keeps, in one place, each with what it measurably gains.

A trick is a process-wide setting, a reach into a library's private parts, or hand-written
code in place of a library's public API. One stays only if it gains at least 5 % on an
end-to-end benchmark of ``bench/`` (docs/performance.md, "Tricks kept and removed"); each below names its benchmark
and its figure, measured alternately against the same code without it on the 2-core
development machine. ``tests/test_tuning.py`` asserts that the library details each one
depends on still exist, so an upgrade that moves them fails loudly instead of silently.

1. psycopg hidden from ``huey.storage`` on SQLite (:func:`import_huey_storage_without`),
   and redis in a process that only reads (``list``, ``status``...), on either database.
2. The task monitor's batch writer in SQL (:class:`MonitorBatchSql`), instead of
   django-huey-monitor's models.
3. The reads a hook run repeats, in SQL (``core.rowsql.values``, ``load``, ``attach``),
   instead of QuerySets; they live in ``core/rowsql.py`` beside the tick's claims.
4. Pooled daemon threads (``process.threadpool.ThreadPool``) instead of
   ``concurrent.futures.ThreadPoolExecutor``, for hook supervisors and index writes.
5. In a command that only reads, the garbage collector off while Django starts and what the
   start built frozen after (:func:`start_without_collections`), and no collection while it
   tears itself down at its exit (:func:`skip_final_collection`).

Items 3 and 4 live in their own modules (this one imports nothing of the project); their
measurements are below, with those of 1 and 2.

Private names of libraries the project still uses, each asserted by ``tests/test_tuning.py``:
``huey.storage.psycopg`` (1); ``SqliteStorage._create_connection``, the per-backend hook
of Huey's SQL storages that ``broker.huey_ext.DoorbellSqliteStorage`` extends (WAL with
``synchronous=NORMAL``, tables created on first use; no public option sets either); and a
consumer's ``worker_threads`` with ``environment.is_alive``, undocumented attributes that
``broker.huey_ext.ArchiveboxConsumer.workers_alive`` reads to know whether a graceful stop
left a worker running (Huey's ``stop`` does not say, and no public API does).

Measured and removed (they gained less than 5 %): the GIL switch interval of 1 ms in worker
processes, glibc's malloc arena cap, ``ObservedModel.from_db`` skipping ``Model.__init__``,
and rowsql's hand-written inserts (``insert``, ``insert_new``: now ``bulk_create``; about
1 % of the 100-page run's CPU, by the per-call costs under 3 below).

This module imports nothing of the project and no Django model: ``settings`` uses it
before Django is set up.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import json
import random
import sys
import time
import uuid

# 1. ---------------------------------------------------------------------------------------
# huey.storage imports psycopg at module level (``try: import psycopg``) for its
# PostgresStorage, which this project never uses. An install with the ``postgres`` extra (the
# Docker image) running on SQLite would carry the driver, about 9 MB of resident memory, in
# every worker. Hiding it while huey.storage is imported leaves ``huey.storage.psycopg`` None
# (the name tests/test_tuning.py checks). Measured: bench/bench_archive.py --rounds 1 --dir
# /dev/shm, alternated, on an install with psycopg: peak RSS of the process tree 192 and
# 185 MB hidden, 201 and 195 MB loaded; measured again after the hook-run rewrite (three
# pairs, farm-bench --vs with a copy of settings.py that skips the call): 193, 186, 185 MB
# hidden against 207, 195, 195 MB loaded, 5.1 % by the median of the pairs' ratios. At the
# 5 % bar, so it stays only as long as it keeps measuring there (the worker is the only
# process that imports Huey; the fork server and hooks do not).
#
# The same for redis (huey.storage's ``try: from redis import ...``), in a process that only
# reads the collection (``boot.setup(wire=False)``: ``list``, ``search``, ``status``): it never
# uses a queue, and the task monitor's models import Huey all the same. Importing redis is
# 100-200 ms of such a command's start. Measured with farm-bench --vs the commit before (with
# ``archivebox.broker`` no longer importing the consumer, which imports redis itself), on the
# million-snapshot collection (docs/performance.md), load 1.5-2.5 with a build on the other
# core, medians of the pairs' ratios: ``list --limit 20`` 0.82x and 0.87x wall (9 and 11
# pairs), ``status`` 0.90x and 0.83x. Workers and the server import redis as before (a Redis
# URL may be set; RedisStorage binds ``huey.storage.Redis`` when the module is imported).


def import_huey_storage_without(*drivers: str) -> None:
    """Import ``huey.storage`` with the named driver modules hidden (those not imported
    already), then unhide them for whoever needs them later."""
    hidden = [name for name in drivers if name not in sys.modules]
    if "huey.storage" in sys.modules or not hidden:
        return
    for name in hidden:
        sys.modules[name] = None  # makes ``import name`` raise ImportError, which huey expects
    try:
        import huey.storage  # noqa: F401, PLC0415 - the point is to import it here, and only here
    finally:
        for name in hidden:
            del sys.modules[name]


# 2. ---------------------------------------------------------------------------------------
# The task monitor writes three signal rows per task. Through django-huey-monitor's models
# (bulk_create of SignalInfoModel, an upsert of TaskModel, bulk_update of late signals' dates)
# its writer thread spent 121 us of CPU per signal; these two statements per batch spend 19 us.
# bench/bench_monitor.py --workload tick --tasks 5000 --rounds 1, monitor on: 399 us of CPU
# per task with this, 640 us with the models. bench/bench_engine.py throughput (monitor on,
# alternated, three rounds each): 5882, 4353, 5089 ticks/s with this; 2841, 2401, 1584 with
# the models.
# It depends on the two models' tables and columns: tests/test_tuning.py names them.


# 3. ---------------------------------------------------------------------------------------
# core/rowsql.py: values, load, attach. A hook run and the side effects that follow it read
# a few columns of a few rows about a dozen times (counted in the 100-page run of
# bench/bench_archive.py: 4489 values, 951 attach, 600 load for 500 hook runs), and each
# QuerySet costs more Python than its statement. CPU per call (time.process_time, medians
# of five interleaved rounds, SQLite, a busy machine): values 138 us by hand against 966 us
# through values_list(); load 438 against 3258 us (select_related + defer + in_bulk); attach
# of a two-row batch 947 against 2556 us (prefetch_related_objects). bench_archive.py
# --rounds 1 --dir /dev/shm, alternated on the same code with these three (and the inserts
# and sideeffects.results' one statement) through the ORM: CPU of the whole run 1.21x and
# 1.17x with the ORM (medians of three pairs each; pairs 0.97-1.24), the archivebox process
# itself 1.34x and 1.30x; with attach and the inserts through the ORM, 1.06x (three pairs,
# the statement through the ORM too) and 1.14x (four pairs); pairs 0.98-1.21. Most of what
# is left is attach: ~1.6 ms x 951 calls of a run's ~20 s. The machine ran other sessions'
# tests at a load of 15 to 36 on 2 cores, so wall time said nothing and the pairs spread
# by +-10 %.
# tests/engine/test_rowsql.py checks that what they read is what the ORM reads.

# 4. ---------------------------------------------------------------------------------------
# process/threadpool.py: ThreadPoolExecutor's workers are not daemon threads (since Python
# 3.9) and are joined at interpreter exit, so a worker that stops would wait for every hook
# supervisor still running, however long its hook runs, instead of leaving the hook to the
# sweep that adopts it (tests/engine/test_threadpool.py has the test that fails with the
# executor). Its idle threads never end either, each keeping a database connection, unless
# every job closes its connection: the pool here keeps a thread's connection across jobs
# and ends the thread after 30 s idle. bench_archive.py --rounds 1 --dir /dev/shm, three
# pairs alternated against the executor (connections closed after each job): CPU of the
# whole run 1.06x with the executor (pairs 0.94, 1.06, 1.10), the archivebox process 1.08x
# (0.96-1.13), at the same machine load as 3; opening a connection (~0.6 ms) per job
# accounts for about 1.5 % of it. Kept for the exit, at the 5 % bar on CPU.


# 5. ---------------------------------------------------------------------------------------
# Garbage collection in a command that only reads (``list``, ``search``, ``status``...).
#
# At its exit: a CLI process's exit tears down every module it imported (about 800 with
# Django and the models) and garbage-collects as it goes: 0.15-0.2 s of ``status``'s
# 0.6-0.8 s here, more than any query of it. gc.freeze() (public; meant for servers that
# fork) moves every live object to a generation no collection visits, so the teardown frees
# what reference counts free and collects nothing; the atexit handlers still run (logging's
# flush). The CLI's entry closes the database connections first: no other object of such a
# command has a finalizer that matters. Measured with farm-bench on the million-snapshot
# collection (docs/performance.md), against the same entry point without it, medians of
# 11-15 pairs: ``status`` 0.81x wall, ``list --limit 20`` 0.82x (ending with os._exit instead
# gained no more: 1.05x against this).
#
# At its start: Django's start (boot.setup: the apps, their models and what they import)
# builds about 100,000 objects that live as long as the process, and the collector traversed
# them again and again while they were made: a full collection of 28 ms, and 64 ms in all,
# during ``status``'s start. Such a process starts with the collector off and freezes what
# its start built, so no later full collection walks it either (the pattern gc.freeze() was
# made for). Frozen objects are never finalized: Django's connection wrappers are among them,
# so such a process closes its connections itself before it exits (the CLI's entry does; a
# process that does not leaves SQLite's -wal file behind, which the next one opens as
# usual). Measured the same way, against the commit before, 15 pairs: ``status`` 0.93x
# wall, ``list --limit 20`` 0.94x.


@contextlib.contextmanager
def start_without_collections():
    """Run a process's start (the block) with the garbage collector off, then freeze what it
    built and turn the collector on again (if it was on)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.freeze()
            gc.enable()


def skip_final_collection() -> None:
    """Nothing left to do but exit: let the interpreter's teardown collect no garbage."""
    gc.freeze()


def random_uuid_int() -> int:
    """A version-4 UUID as an int; signal ids need uniqueness, not unpredictability."""
    value = random.getrandbits(128)
    value &= ~(0xC000 << 48)
    value |= 0x8000 << 48
    value &= ~(0xF000 << 64)
    return value | (4 << 76)


class MonitorBatchSql:
    """The two statements a batch needs, with values prepared the way the connection's backend stores them.

    The writer handles thousands of signals a second and must leave the CPU (and the GIL)
    to the workers: rows are plain tuples, never model instances, and on SQLite a whole
    batch goes in as one JSON parameter that SQLite unpacks itself (``json_each``), so
    Python binds two parameters per statement instead of ten per row.
    """

    TASK_COLUMNS = ("task_id", "name", "create_dt", "update_dt", "state_id", "finished")
    SIGNAL_COLUMNS = ("id", "hostname", "pid", "thread", "task_id", "signal_name", "exception_line", "exception", "create_dt")

    def __init__(self, conn, task_model, signal_model):
        self.conn = conn
        self.sqlite = self.conn.vendor == "sqlite"
        self._seconds: dict[int, str] = {}
        q = self.conn.ops.quote_name
        task_table, signal_table = q(task_model._meta.db_table), q(signal_model._meta.db_table)
        self.task_defaults = self._defaults(task_model, self.TASK_COLUMNS)
        self.signal_defaults = self._defaults(signal_model, self.SIGNAL_COLUMNS)
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
            return dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)
        # How Django's SQLite backend stores an aware datetime: naive UTC text. Signals of a
        # batch share their seconds, so the formatted second is reused.
        second = int(timestamp)
        prefix = self._seconds.get(second)
        if prefix is None:
            prefix = self._seconds[second] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second))
        return f"{prefix}.{int((timestamp - second) * 1_000_000):06d}"

