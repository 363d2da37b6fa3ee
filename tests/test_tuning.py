"""The library details the kept tricks (archivebox.tuning) and private hooks depend on still exist.

Each of these fails on an upgrade that moves the detail, instead of the trick silently
doing nothing or writing the wrong columns.
"""

from __future__ import annotations

import sqlite3

import huey.storage
from huey.storage import BaseSqlStorage, SqliteStorage
from huey_monitor.models import SignalInfoModel, TaskModel

from archivebox import tuning
from archivebox.broker.huey_ext import DoorbellSqliteStorage


def columns(model) -> dict:
    return {field.column: field for field in model._meta.concrete_fields}


def test_huey_storage_still_imports_psycopg_under_that_name():
    """import_huey_without_postgres_driver hides psycopg from this module-level import."""
    assert hasattr(huey.storage, "psycopg")


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
