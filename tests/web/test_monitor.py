"""The task monitor: both queues recorded once, in their own DB file, in order, without marking others' tasks.

In-process tests drive the writer directly on the session's monitor DB; the others run
real consumers (`archivebox add`'s embedded pools, and stock `huey_consumer` processes).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest
from helpers import VENV_BIN, wait_until
from huey_monitor.models import SignalInfoModel, TaskModel

from archivebox.web import monitor
from archivebox.web.dbrouter import monitor_db

from .webtools import web_collection

pytestmark = pytest.mark.usefixtures("empty_monitor")


def event(task_id: str, signal: str, at: float, pid: int | None = None, name: str = "ticks/tick") -> monitor.Event:
    return monitor.Event(at, signal, task_id, name, "worker-1", pid or os.getpid())


def state_of(task_id: str) -> tuple[str, bool]:
    task = TaskModel.objects.using(monitor_db()).select_related("state").get(pk=task_id)
    return task.state.signal_name, task.finished


def test_a_late_older_signal_never_moves_a_task_back():
    task_id, now, host = str(uuid.uuid4()), time.time(), socket.gethostname()
    monitor.write_events([event(task_id, "executing", now + 1), event(task_id, "complete", now + 2)], monitor_db(), host)
    # The producer's buffer is written later, though its "enqueued" happened first.
    monitor.write_events([event(task_id, "enqueued", now)], monitor_db(), host)
    assert state_of(task_id) == ("complete", True)
    names = list(SignalInfoModel.objects.using(monitor_db()).filter(task_id=task_id).order_by("create_dt").values_list("signal_name", flat=True))
    assert names == ["enqueued", "executing", "complete"]


def test_the_recorder_buffers_and_one_flush_writes_everything():
    recorder = monitor.SignalRecorder(flush_interval=3600, stale_check_interval=3600)
    ids = [str(uuid.uuid4()) for _ in range(300)]
    for task_id in ids:
        for n, signal in enumerate(("enqueued", "executing", "complete")):
            recorder.add(event(task_id, signal, time.time() + n))
    assert TaskModel.objects.using(monitor_db()).filter(pk__in=ids).count() == 0, "written on the hot path"
    recorder.close()
    assert TaskModel.objects.using(monitor_db()).filter(pk__in=ids, finished=True).count() == 300
    assert SignalInfoModel.objects.using(monitor_db()).filter(task_id__in=ids).count() == 900


def test_only_this_hosts_dead_workers_tasks_are_marked_unknown():
    host = socket.gethostname()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead_here, live_here, other_host = (str(uuid.uuid4()) for _ in range(3))
        started = time.time() - 1
        monitor.write_events([event(dead_here, "executing", started, pid=child.pid)], monitor_db(), host)
        monitor.write_events([event(live_here, "executing", started, pid=live.pid)], monitor_db(), host)
        monitor.write_events([event(other_host, "executing", started, pid=child.pid)], monitor_db(), "another-host")

        stale = monitor.stale_executing(monitor_db(), host)
        assert [e.task_id for e in stale] == [dead_here]
        monitor.write_events(stale, monitor_db(), host)
        assert state_of(dead_here) == ("unknown", True)
        assert state_of(live_here) == ("executing", False)
        assert state_of(other_host) == ("executing", False)
    finally:
        live.kill()
        live.wait()


def test_djhuey_stays_in_memory_and_never_immediate_even_with_debug(tmp_path):
    code = (
        "from archivebox import boot; boot.setup()\n"
        "from huey.contrib import djhuey\n"
        "from huey_monitor.tasks import store_signals\n"
        "from archivebox.tasks.queue import huey as ticks\n"
        "from archivebox.sideeffects.queue import huey as effects\n"
        "from archivebox.web import monitor\n"
        "monitor.install([('ticks', ticks), ('sideeffects', effects)])\n"
        "print(type(djhuey.HUEY).__name__, djhuey.HUEY.immediate, ticks.immediate, effects.immediate)\n"
        "print(sum(len(v) for v in ticks._signal.receivers.values()), sum(len(v) for v in effects._signal.receivers.values()))\n"
        "print(store_signals in ticks._signal.receivers['any'] or store_signals in effects._signal.receivers['any'])\n"
        "from huey_monitor.tasks import startup_handler\n"
        "print(startup_handler in [*ticks._startup.values(), *effects._startup.values()], startup_handler in djhuey.HUEY._startup.values())\n"
        "from django.conf import settings; print(sorted(settings.DATABASES))\n"
    )
    env = {**os.environ, "DATA_DIR": str(tmp_path), "DEBUG": "true"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert out[0] == "MemoryHuey False False False"
    assert out[1] == "1 1", "each queue has exactly one recorder, even after a second install()"
    assert out[2] == "False", "django-huey-monitor's own handler must not listen to our queues"
    assert out[3] == "False True", "the stock startup handler (marks every executing task unknown) must not run on our queues"
    assert out[4] == "['default', 'monitor']"


def test_with_postgres_the_monitor_shares_the_app_database(tmp_path):
    code = ("from archivebox import boot; boot.setup()\n"
            "from django.db import router\nfrom huey_monitor.models import TaskModel\nfrom archivebox.core.models import Crawl\n"
            "from django.conf import settings\n"
            "print(sorted(settings.DATABASES), router.db_for_write(TaskModel), router.db_for_write(Crawl) or 'default')\n"
            "print(router.allow_migrate('default', 'huey_monitor'), router.allow_migrate('default', 'core'))\n")
    env = {**os.environ, "DATA_DIR": str(tmp_path), "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert out == ["['default'] default default", "True True"]


def monitor_rows(root) -> list[tuple]:
    with sqlite3.connect(root / "monitor.sqlite3") as conn:
        return conn.execute("SELECT t.task_id, t.name, t.finished, s.signal_name, s.pid FROM huey_monitor_taskmodel t "
                            "JOIN huey_monitor_signalinfomodel s ON s.task_id = t.task_id").fetchall()


def test_embedded_pools_record_both_queues_once_in_the_monitor_file(tmp_path):
    collection = web_collection(tmp_path / "data", plugins="noop,titler")
    collection.cli("add", "https://example.com/a", "https://example.com/b")
    rows = monitor_rows(collection.root)
    names = {name.split("/")[0] for _, name, *_ in rows}
    assert names == {"ticks", "sideeffects"}
    per_task: dict[str, list[str]] = {}
    finished: dict[str, bool] = {}
    for task_id, _, done, signal, _ in rows:
        per_task.setdefault(task_id, []).append(signal)
        finished[task_id] = bool(done)
    # Every task that ran was recorded once per signal. A message can also be enqueued and
    # never consumed before `add` stops its pools (a redundant wake-up of a row that just
    # finished): that one is recorded as enqueued only.
    ran = {task: signals for task, signals in per_task.items() if "executing" in signals}
    assert len(ran) >= 10
    assert all(sorted(signals) == ["complete", "enqueued", "executing"] and finished[task] for task, signals in ran.items()), ran
    assert all(signals == ["enqueued"] for task, signals in per_task.items() if task not in ran), per_task
    app_tables = [r[0] for r in collection.query("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert not [t for t in app_tables if t.startswith("huey_monitor")], "monitor tables must live in monitor.sqlite3"


def test_stock_huey_consumers_record_their_signals(tmp_path):
    collection = web_collection(tmp_path / "data", plugins="noop")
    ticks = collection.start_consumer("ticks", workers=2)
    effects = collection.start_consumer("sideeffects", workers=4)
    try:
        # Both pools registered first: otherwise `add` runs its own workers, which take
        # every task they enqueue themselves.
        wait_until(lambda: {row["label"].split()[0] for row in collection.query(
            "SELECT label FROM core_process WHERE kind='worker' AND status='running'")} >= {"ticks", "sideeffects"},
                   timeout=30, message="both pools to register")
        collection.cli("add", "https://example.com/consumed")
        wait_until(lambda: {r[4] for r in monitor_rows(collection.root) if r[3] == "complete"} >= {ticks.pid, effects.pid},
                   timeout=30, message="completions recorded by both consumer processes")
    finally:
        collection.stop_all(15)
    executing = [r for r in monitor_rows(collection.root) if r[3] == "executing"]
    assert len(executing) == len({r[0] for r in executing}), "a task was recorded twice"


def test_without_monitor_tables_the_recorder_drops_and_says_so_once(tmp_path, caplog):
    env = {**os.environ, "DATA_DIR": str(tmp_path)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    code = ("import logging; logging.basicConfig(level=logging.WARNING)\n"
            "from archivebox import boot; boot.setup()\nimport time, uuid\n"
            "from archivebox.web import monitor\n"
            "r = monitor.SignalRecorder(flush_interval=3600)\n"
            "for _ in range(2):\n"
            "    r.add(monitor.Event(time.time(), 'complete', str(uuid.uuid4()), 'ticks/tick', 't', 1)); r.flush()\n"
            "print(r.dropped)\n")
    result = subprocess.run([str(VENV_BIN / "python"), "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"
    assert result.stderr.count("task monitor: dropped") == 1, result.stderr
