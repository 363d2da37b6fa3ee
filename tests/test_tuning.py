"""The library details the kept tricks (archivebox.tuning) and private hooks depend on still exist.

Each of these fails on an upgrade that moves the detail, instead of the trick silently
doing nothing or writing the wrong columns.
"""

from __future__ import annotations

import sqlite3
import threading

import huey.storage
from huey.storage import BaseSqlStorage, SqliteStorage
from huey_monitor.models import SignalInfoModel, TaskModel

from archivebox import tuning
from archivebox.broker.huey_ext import DoorbellSqliteStorage, SqliteQueue


def columns(model) -> dict:
    return {field.column: field for field in model._meta.concrete_fields}


def test_huey_storage_still_imports_psycopg_under_that_name():
    """import_huey_storage_without hides psycopg (on SQLite) from this module-level import."""
    assert hasattr(huey.storage, "psycopg")


def test_huey_storage_still_imports_redis_under_those_names():
    """A reading command hides redis from huey.storage's module-level import, which then binds None."""
    assert all(hasattr(huey.storage, name) for name in ("Redis", "ConnectionPool"))


def test_the_monitor_sql_names_only_columns_django_huey_monitor_has():
    tasks, signals = columns(TaskModel), columns(SignalInfoModel)
    assert set(tuning.MonitorBatchSql.TASK_COLUMNS) <= set(tasks)
    assert set(tuning.MonitorBatchSql.SIGNAL_COLUMNS) <= set(signals)
    # The upsert's conflict target and the signal row's key.
    assert tasks["task_id"].primary_key and signals["id"].primary_key
    assert tasks["state_id"].related_model is SignalInfoModel and signals["task_id"].related_model is TaskModel


def test_huey_sql_storage_still_opens_connections_through_the_hook_the_doorbell_storage_overrides(tmp_path):
    """DoorbellSqliteStorage overrides ``_create_connection`` (Huey's own per-backend hook) to
    set ``synchronous=NORMAL`` and create its tables on first use."""
    assert "_create_connection" in vars(BaseSqlStorage) and "_create_connection" in vars(SqliteStorage)
    storage = DoorbellSqliteStorage(name="tuning", filename=str(tmp_path / "q.sqlite3"))
    try:
        assert storage.conn.execute("pragma synchronous").fetchone() == (1,)  # NORMAL
        assert storage.queue_size() == 0  # the tables exist
    finally:
        storage.close()
    assert sqlite3.connect(tmp_path / "q.sqlite3").execute("pragma journal_mode").fetchone() == ("wal",)


def test_a_huey_consumer_still_lists_its_workers_and_can_tell_one_is_alive(tmp_path):
    """ArchiveboxConsumer.workers_alive reads ``worker_threads`` (pairs of a worker and the
    thread or process running it) and ``environment.is_alive``: undocumented, so checked here."""
    queue = SqliteQueue("tuning", filename=str(tmp_path / "q.sqlite3"), doorbell_dir=str(tmp_path / "run"))
    consumer = queue.create_consumer(workers=2)
    assert len(consumer.worker_threads) == 2
    assert all(isinstance(thread, threading.Thread) for _, thread in consumer.worker_threads)
    assert consumer.workers_alive() is False  # built, not started
    release = threading.Event()
    busy = threading.Thread(target=release.wait, args=(10,))
    busy.start()
    try:
        assert consumer.environment.is_alive(busy) is True
        consumer.worker_threads.append((None, busy))  # a worker that a graceful stop did not end
        assert consumer.workers_alive() is True
    finally:
        release.set()
        busy.join(10)
    assert consumer.environment.is_alive(busy) is False and consumer.workers_alive() is False
