"""The Redis queue rides out a Redis outage; the pool health check says where a pool runs."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from archivebox.broker.huey_ext import build_huey, shutting_down
from archivebox.broker.huey_ext import RedisOutage, ResilientRedisStorage
from helpers import Collection


def test_a_consumer_waits_out_a_redis_outage(tmp_path, private_redis, engine_logs):
    huey = build_huey("ticks", tmp_path, private_redis.url)
    storage = huey.storage
    assert isinstance(storage, ResilientRedisStorage)
    storage.enqueue(b"before")
    assert storage.dequeue() == b"before"

    private_redis.kill(signal.SIGKILL)
    started = time.monotonic()
    assert [storage.dequeue() for _ in range(4)] == [None] * 4  # an empty queue for a moment, not an error
    waited = time.monotonic() - started
    assert 0.1 + 0.2 + 0.4 <= waited < 5  # it backs off between polls instead of spinning
    assert storage.read_schedule(datetime.datetime.now(datetime.timezone.utc)) == []
    with pytest.raises(RedisConnectionError):
        storage.enqueue(b"lost")  # a sender must know its message was not sent
    warnings = [r.getMessage() for r in engine_logs.records if "Redis is unreachable" in r.getMessage()]
    assert len(warnings) == 1  # one line per outage, not a traceback per poll

    private_redis.start()
    storage.enqueue(b"after")
    assert storage.dequeue() == b"after"
    assert any("Redis is reachable again" in r.getMessage() for r in engine_logs.records)


def test_shutdown_cuts_the_outage_wait_short(tmp_path, private_redis):
    storage = build_huey("sideeffects", tmp_path, private_redis.url).storage
    storage.outage = RedisOutage("sideeffects", max_wait=30.0)
    storage.outage._since, storage.outage._failures = time.monotonic(), 20  # deep into an outage: the next wait is 30 s
    private_redis.kill(signal.SIGKILL)
    threading.Timer(0.3, shutting_down.set).start()
    started = time.monotonic()
    try:
        assert storage.dequeue() is None
    finally:
        shutting_down.clear()
    assert 0.25 <= time.monotonic() - started < 5


def test_healthcheck_says_whether_a_pool_runs_on_this_machine(tmp_path):
    collection = Collection(tmp_path / "data", plugins="noop").init()
    run = lambda *args, **env: subprocess.run([sys.executable, "-m", "archivebox.healthcheck", *args],  # noqa: E731
                                              cwd=collection.root, env={**collection.env, **env}, capture_output=True,
                                              text=True, timeout=60)
    assert run("bogus").returncode == 2
    down = run("ticks", MACHINE_ID="here")
    assert down.returncode == 1 and "no ticks pool with a fresh heartbeat on machine here" in down.stderr
    consumer = collection.start_consumer("ticks", 1, env={"MACHINE_ID": "here"})
    try:
        deadline = time.monotonic() + 60
        while run("ticks", MACHINE_ID="here").returncode != 0:
            assert time.monotonic() < deadline and consumer.poll() is None, collection.log_text()
            time.sleep(0.2)
        assert run("ticks", MACHINE_ID="elsewhere").returncode == 1
        assert run("sideeffects", MACHINE_ID="here").returncode == 1
    finally:
        os.killpg(consumer.pid, signal.SIGINT)
        consumer.wait(timeout=60)
