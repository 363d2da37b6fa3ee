"""Pooled threads: a job never waits behind another, threads (and their database
connections) are reused, idle threads end, delayed calls share one waiting thread, and a
running job never keeps its process from exiting."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from django.db import connection

from archivebox.core.models import Tag
from archivebox.process.threadpool import ThreadPool, Timers
from helpers import wait_until


def run_and_wait(pool: ThreadPool, job) -> None:
    done = threading.Event()

    def wrapped():
        try:
            job()
        finally:
            done.set()

    pool.submit(wrapped)
    assert done.wait(10)
    wait_until(lambda: pool.busy() == 0, timeout=10, message="job counted as done")


def test_a_job_runs_at_once_even_while_others_block():
    pool = ThreadPool("test")
    release = threading.Event()
    started = []
    for index in range(5):
        pool.submit(lambda index=index: (started.append(index), release.wait(10)))
    wait_until(lambda: len(started) == 5, timeout=10, message="five blocking jobs running at once")
    assert pool.busy() == 5
    assert pool.join(0.05) == 5
    release.set()
    assert pool.join(10) == 0


def test_a_thread_and_its_database_connection_serve_job_after_job():
    pool = ThreadPool("test")
    seen = []

    def job():
        Tag.objects.filter(name="x").exists()
        seen.append((threading.get_ident(), id(connection.connection)))

    for _ in range(3):
        run_and_wait(pool, job)
    assert len(set(seen)) == 1, seen


def test_a_failing_job_is_logged_and_the_thread_keeps_serving(caplog):
    pool = ThreadPool("test")
    threads = []

    def boom():
        threads.append(threading.get_ident())
        raise RuntimeError("boom")

    run_and_wait(pool, boom)
    run_and_wait(pool, lambda: threads.append(threading.get_ident()))
    assert threads[0] == threads[1]
    assert "test: a job failed" in caplog.text and "RuntimeError: boom" in caplog.text


def test_an_idle_thread_ends_and_closes_its_connection():
    pool = ThreadPool("test", idle=0.2)
    threads = []

    def job():
        Tag.objects.filter(name="x").exists()
        threads.append(threading.current_thread())

    run_and_wait(pool, job)
    wait_until(lambda: not threads[0].is_alive(), timeout=10, message="the idle thread ended")
    run_and_wait(pool, job)
    assert threads[1] is not threads[0]


def test_delayed_calls_run_in_order_of_their_due_time():
    timers = Timers(ThreadPool("test"))
    calls = []
    started = time.monotonic()
    timers.call_later(0.3, calls.append, "late")
    timers.call_later(0.1, calls.append, "early")
    wait_until(lambda: len(calls) == 2, timeout=10, message="both delayed calls ran")
    assert calls == ["early", "late"]
    assert time.monotonic() - started >= 0.3


def test_with_a_limit_jobs_beyond_it_wait_their_turn_in_order():
    pool = ThreadPool("limited", limit=2)
    release = threading.Event()
    running, finished = [], []
    lock = threading.Lock()

    def job(index):
        with lock:
            running.append(index)
        release.wait(10)
        with lock:
            finished.append(index)

    for index in range(5):
        pool.submit(lambda index=index: job(index))
    wait_until(lambda: len(running) == 2, timeout=10, message="two jobs running")
    assert pool.join(0.1) == 5 and running == [0, 1]  # the other three wait, counted as busy
    release.set()
    assert pool.join(10) == 0
    assert running == [0, 1, 2, 3, 4] and sorted(finished) == [0, 1, 2, 3, 4]
    assert len({thread.name for thread in threading.enumerate() if thread.name.startswith("limited-")}) == 2


EXITS_WITH_A_JOB_RUNNING = """
import os, sys, threading
from archivebox import boot
boot.setup()
from archivebox.process.threadpool import ThreadPool
started = threading.Event()
ThreadPool("supervisors").submit(lambda: (started.set(), threading.Event().wait(600)))
started.wait(10)
print("job running, main thread ends", flush=True)
"""


def test_a_process_exits_while_a_pooled_job_still_runs(tmp_path):
    """The pool's threads are daemon threads: a worker that stops leaves a hook supervisor
    that is still running behind (the sweep adopts its hook), rather than waiting for it at
    exit as concurrent.futures' threads would."""
    proc = subprocess.Popen([sys.executable, "-c", EXITS_WITH_A_JOB_RUNNING], env={**os.environ, "DATA_DIR": str(tmp_path)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: proc.poll() is not None, timeout=60, message="the process to exit with its job still running")
    finally:
        if proc.poll() is None:
            proc.kill()
    out, err = proc.communicate()
    assert proc.returncode == 0 and "job running" in out, err
