"""Shared by the subcommands: starting Django on an initialized collection."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.recorder import MigrationRecorder

from archivebox.cli import CommandError


def setup_django(require_init: bool = True) -> None:
    """Refuse a folder that is not a collection yet (Django itself is set up by ``main``)."""
    if require_init and not is_initialized():
        raise CommandError(f"{settings.DATA_DIR} is not an ArchiveBox collection yet: run `archivebox init` there first")


def is_initialized() -> bool:
    try:
        recorder = MigrationRecorder(connection)
        return recorder.has_table() and recorder.migration_qs.filter(app="core").exists()
    except DatabaseError:
        return False


def data_dir() -> Path:
    return settings.DATA_DIR


def read_lines(path: str | os.PathLike) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError as err:
        raise CommandError(f"cannot read {path}: {err.strerror}") from None
