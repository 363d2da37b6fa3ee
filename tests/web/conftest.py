"""Fixtures of the web tests (helpers live in :mod:`webtools`)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connections
from huey_monitor.models import SignalInfoModel, TaskModel

from archivebox.web.dbrouter import monitor_db

# The in-process tests share the session's data dir: give it the monitor's tables too.
call_command("migrate", database=monitor_db(), verbosity=0)


@pytest.fixture(scope="session")
def postgres_url():
    """A throw-away Postgres cluster (Debian's ``postgresql`` package) on a free port; its URL."""
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not bins:
        pytest.fail("PostgreSQL server binaries not found (Debian package postgresql; .ci/run installs it)")
    bindir = bins[-1].parent
    # Not under pytest's tmp dir: that one is private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="abx-pg-"))
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(root, "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(root / "data"), "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True, timeout=120)
    subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(root / "data"), "-l", str(root / "log"), "-w", "-t", "60",
                    "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                   check=True, capture_output=True, timeout=120)
    try:
        yield f"postgres://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def empty_monitor():
    yield
    using = monitor_db()
    TaskModel.objects.using(using).update(state=None)
    SignalInfoModel.objects.using(using).all().delete()
    TaskModel.objects.using(using).all().delete()
    connections[using].close()


