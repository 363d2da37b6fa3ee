"""Both deployments come from the environment alone: DATABASE_URL, REDIS_URL, pool sizes.

Settings are read once when a process starts, so each case runs in a fresh interpreter
with the environment under test and reports what it built as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers import VENV_BIN, Collection, wait_until

from archivebox.config import ConfigError, EngineConfig
from archivebox.settings import database_from_url

REPORT = r"""
import json, sys
sys.modules.update({name: None for name in sys.argv[1:]})  # make these modules "not installed"
from archivebox import boot
boot.setup()
from django.conf import settings
from archivebox.tasks.queue import huey as ticks
from archivebox.sideeffects.queue import huey as sideeffects
db = settings.DATABASES["default"]
def queue(h):
    storage = h.storage
    pool = getattr(storage, "pool", None)
    kwargs = pool.connection_kwargs if pool is not None else {}
    return {"class": type(h).__name__, "storage": type(storage).__name__, "filename": getattr(storage, "filename", None),
            "name": storage.name, "host": kwargs.get("host"), "port": kwargs.get("port"), "db": kwargs.get("db"),
            "socket_timeout": kwargs.get("socket_timeout"), "socket_connect_timeout": kwargs.get("socket_connect_timeout"),
            "read_timeout": getattr(storage, "read_timeout", None)}
print(json.dumps({"engine": db["ENGINE"], "name": str(db["NAME"]), "host": db.get("HOST"), "port": db.get("PORT"),
                  "user": db.get("USER"), "options": db.get("OPTIONS"), "aliases": sorted(settings.DATABASES),
                  "ticks": queue(ticks), "sideeffects": queue(sideeffects),
                  "engine_config": {"ticks_workers": settings.ENGINE.ticks_workers,
                                    "sideeffects_workers": settings.ENGINE.sideeffects_workers,
                                    "machine_id": settings.ENGINE.machine_id}}))
"""


def settings_report(tmp_path, env: dict, hide: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    return subprocess.run([sys.executable, "-c", REPORT, *hide], env={**clean, "DATA_DIR": str(tmp_path), **env},
                          capture_output=True, text=True, timeout=60)


def report(tmp_path, env: dict) -> dict:
    result = settings_report(tmp_path, env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_embedded_default_is_sqlite_files(tmp_path):
    got = report(tmp_path, {})
    assert got["engine"] == "django.db.backends.sqlite3" and got["name"] == str(tmp_path / "index.sqlite3")
    assert got["aliases"] == ["default", "monitor"]
    for name in ("ticks", "sideeffects"):
        assert got[name]["class"] == "SqliteQueue"
        assert got[name]["filename"] == str(tmp_path / "queues" / f"{name}.sqlite3")


def test_scale_out_is_postgres_and_redis(tmp_path):
    got = report(tmp_path, {"DATABASE_URL": "postgres://abx:s3cret@db.example:5433/archive?sslmode=disable",
                            "REDIS_URL": "redis://queue.example:6380/2", "TICKS_WORKERS": "3", "SIDEEFFECTS_WORKERS": "9",
                            "MACHINE_ID": "worker-7"})
    assert got["engine"] == "django.db.backends.postgresql"
    assert (got["name"], got["host"], got["port"], got["user"]) == ("archive", "db.example", "5433", "abx")
    assert got["options"] == {"connect_timeout": 10, "sslmode": "disable"}
    assert got["aliases"] == ["default"]  # the task monitor's tables live in Postgres too
    for name in ("ticks", "sideeffects"):
        queue = got[name]
        assert (queue["class"], queue["storage"], queue["name"]) == ("RedisQueue", "ResilientRedisStorage", name)
        assert (queue["host"], queue["port"], queue["db"]) == ("queue.example", 6380, 2)
        # A hung Redis costs a worker seconds, never forever; a blocking pop still fits in the socket timeout.
        assert queue["socket_connect_timeout"] == 5.0 and queue["socket_timeout"] > queue["read_timeout"]
    assert got["engine_config"] == {"ticks_workers": 3, "sideeffects_workers": 9, "machine_id": "worker-7"}
    assert not (tmp_path / "queues").exists()


def test_url_options_override_the_defaults(tmp_path):
    got = report(tmp_path, {"DATABASE_URL": "postgresql://abx@db/archive?connect_timeout=3",
                            "REDIS_URL": "redis://queue:6379/0?socket_timeout=4&socket_connect_timeout=2"})
    assert got["options"] == {"connect_timeout": 3}
    assert (got["ticks"]["socket_timeout"], got["ticks"]["socket_connect_timeout"]) == (4.0, 2.0)


def test_postgres_without_psycopg_is_one_clear_line(tmp_path):
    result = settings_report(tmp_path, {"DATABASE_URL": "postgres://abx@db/archive"}, hide=("psycopg",))
    assert result.returncode != 0
    assert "pip install 'archivebox[postgres]'" in result.stderr


def test_cli_reports_a_bad_database_url_in_one_line(tmp_path):
    result = subprocess.run([str(VENV_BIN / "archivebox"), "status"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "DATA_DIR": str(tmp_path), "DATABASE_URL": "mysql://x@y/z"})
    assert result.returncode == 2
    assert result.stderr.strip() == "archivebox: error: DATABASE_URL: unsupported scheme 'mysql' (use sqlite:// or postgres://)"


@pytest.mark.parametrize("url, name", [
    ("sqlite:///index2.sqlite3", "DATA/index2.sqlite3"),
    ("sqlite:///sub/dir/my%20db.sqlite3", "DATA/sub/dir/my db.sqlite3"),
    ("sqlite:////srv/abx/index.sqlite3", "/srv/abx/index.sqlite3"),
])
def test_sqlite_urls_are_relative_to_the_data_dir_unless_absolute(tmp_path, url, name):
    database = database_from_url(url, tmp_path)
    assert database["ENGINE"] == "django.db.backends.sqlite3" and database["NAME"] == name.replace("DATA", str(tmp_path))
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"  # the engine's SQLite set-up, not the parser's


@pytest.mark.parametrize("url, message", [
    ("sqlite://dbhost/index.sqlite3", "DATABASE_URL: sqlite URLs take no host"),
    ("sqlite://", "DATABASE_URL: an sqlite URL names a file"),
    ("sqlite://:memory:", "DATABASE_URL: an sqlite URL names a file"),
    ("postgres://abx@db:notaport/archive", "DATABASE_URL: This string is not a valid url"),
    ("mysql://x@y/z", "DATABASE_URL: unsupported scheme 'mysql' (use sqlite:// or postgres://)"),
])
def test_a_bad_database_url_is_one_config_error(tmp_path, url, message):
    with pytest.raises(ConfigError) as err:
        database_from_url(url, tmp_path)
    assert str(err.value).startswith(message) and "\n" not in str(err.value), str(err.value)


def test_pool_sizes_from_the_environment(tmp_path):
    config = EngineConfig.from_env({"TICKS_WORKERS": "6", "SIDEEFFECTS_WORKERS": "24"}, data_dir=tmp_path)
    assert (config.ticks_workers, config.sideeffects_workers) == (6, 24)
    assert (EngineConfig.from_env({}, data_dir=tmp_path).ticks_workers, EngineConfig.from_env({}, data_dir=tmp_path).sideeffects_workers) == (4, 16)
    for bad in ("0", "two", "1.5"):
        with pytest.raises(ConfigError, match="TICKS_WORKERS"):
            EngineConfig.from_env({"TICKS_WORKERS": bad}, data_dir=tmp_path)


@pytest.mark.parametrize(("args", "ticks", "sideeffects"), [((), 3, 5), (("--ticks", "2"), 2, 5)])
def test_archivebox_worker_takes_its_pool_sizes_from_the_environment(tmp_path, args, ticks, sideeffects):
    env = {"TICKS_WORKERS": "3", "SIDEEFFECTS_WORKERS": "5"}
    collection = Collection(tmp_path / "data", plugins="noop").init()
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(VENV_BIN / "archivebox"), "worker", *args], cwd=collection.root, env={**collection.env, **env},
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "Workers running" in log.read_text() or proc.poll() is not None, timeout=60, message="the worker to start")
        assert f"Workers running ({ticks} tick, {sideeffects} side-effect threads)" in log.read_text()
        labels = wait_until(lambda: sorted(r[0] for r in collection.query(
            "SELECT label FROM core_process WHERE kind = 'worker' AND status = 'running'")) or None, timeout=30,
            message="the worker rows")
        assert labels == [f"sideeffects pool ({sideeffects} workers)", f"ticks pool ({ticks} workers)"]
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 0
