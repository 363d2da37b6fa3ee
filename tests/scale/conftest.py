"""Fixtures of the scale-out tests: real Postgres and Redis servers on 127.0.0.1.

The shared servers (``pg_server``, ``redis_server``) live for the whole session; each
test gets a database of its own and a Redis logical database of its own. Tests that kill
or restart a server ask for a private one (``private_pg``, ``private_redis``). Every server
is stopped by its PID at the end, whatever the outcome.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import PostgresServer, RedisServer  # noqa: E402

_redis_dbs = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server():
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def database_url(pg_server) -> str:
    """A fresh database on the shared Postgres server."""
    return pg_server.create_database()


@pytest.fixture
def redis_url(redis_server) -> str:
    """A logical database of its own on the shared Redis server (the server has 64)."""
    index = next(_redis_dbs)
    if index >= 64:
        pytest.fail("more than 63 tests asked for a shared Redis database; raise --databases in servers.py")
    return f"redis://127.0.0.1:{redis_server.port}/{index}"


@pytest.fixture
def private_pg():
    """A Postgres server of this test's own, which the test may kill and restart."""
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def private_redis():
    """A Redis server of this test's own, which the test may kill and restart."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()
