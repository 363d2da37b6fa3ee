"""Throw-away Postgres and Redis servers on 127.0.0.1, for the scale-out tests and benchmarks.

Each server runs from Debian's packages (``postgresql``, ``redis-server``) on a free
loopback port, with its files in a temporary folder. It is started and stopped by the
PID of its own main process, never by name, and never listens on another address.
Both can be killed and started again on the same port, to test recovery.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class ServerProcess:
    """A server started by this process, stopped by its PID."""

    name = "server"

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.log: Path | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, sig: int) -> None:
        if self.running():
            os.kill(self.proc.pid, sig)

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 30) -> None:
        """Send ``sig`` to the server's main process and wait until it is gone."""
        if not self.running():
            return
        os.kill(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            logger.warning("%s pid %s ignored signal %s; killing it", self.name, self.proc.pid, sig)
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=timeout)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""


class RedisServer(ServerProcess):
    """``redis-server`` on 127.0.0.1:<free port>, nothing persisted: a restart empties it."""

    name = "redis"

    def __init__(self, root: Path | None = None):
        super().__init__()
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found (Debian package redis-server; .ci/run installs it)")
        self.binary = binary
        self.root = Path(root or tempfile.mkdtemp(prefix="abx-redis-"))
        self.port = free_port()
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def start(self) -> "RedisServer":
        self.starts += 1
        self.log = self.root / f"redis-{self.starts}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", LOOPBACK, "--save", "", "--appendonly", "no",
                 "--dir", str(self.root), "--databases", "64", "--maxclients", "2000", "--protected-mode", "yes"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: self._ready(), 30, f"redis on port {self.port}")
        return self

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {self.proc.returncode}:\n{self.log_text()}")
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        self.kill(signal.SIGTERM)
        shutil.rmtree(self.root, ignore_errors=True)


class PostgresServer(ServerProcess):
    """A Postgres cluster of its own: initdb in a temp folder, ``postgres`` on 127.0.0.1:<free port>.

    As root the server runs as the ``postgres`` user (Postgres refuses to run as root); the
    Popen'd process is the postmaster itself, so its PID is the one signals go to:
    SIGQUIT is ``pg_ctl stop -m immediate`` (no checkpoint, crash recovery on the next
    start), SIGINT is ``-m fast``.
    """

    name = "postgres"

    def __init__(self, root: Path | None = None, max_connections: int = 300):
        super().__init__()
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not bins:
            raise RuntimeError("PostgreSQL server binaries not found (Debian package postgresql; .ci/run installs it)")
        self.bindir = bins[-1].parent
        # Not under pytest's tmp dir: that one is private to root, and the server runs as postgres.
        self.root = Path(root or tempfile.mkdtemp(prefix="abx-pg-"))
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            shutil.chown(self.root, self.user)
        self.data = self.root / "data"
        self.port = free_port()
        self.max_connections = max_connections
        self.starts = 0
        if not (self.data / "PG_VERSION").exists():  # a cluster left in ``root`` is started again as it is
            self._initdb()

    def _initdb(self) -> None:
        subprocess.run([str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                        "--no-sync"], check=True, capture_output=True, timeout=120, user=self.user, cwd=self.root)

    @property
    def url(self) -> str:
        """The server's URL without a database name (append ``/<db>``)."""
        return f"postgres://postgres@{LOOPBACK}:{self.port}"

    def start(self) -> "PostgresServer":
        self.starts += 1
        self.log = self.root / f"postgres-{self.starts}.log"
        log_fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        if self.user:
            os.chown(self.log, pwd.getpwnam(self.user).pw_uid, -1)
        # fsync=off is safe here (only the server process is ever killed, never the OS);
        # synchronous_commit stays on, as in production: with it off, a SIGQUIT restart
        # loses the last commits, which no real deployment would see.
        try:
            self.proc = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.root),
                 "-c", f"listen_addresses={LOOPBACK}", "-c", "fsync=off",
                 "-c", "full_page_writes=off", "-c", f"max_connections={self.max_connections}",
                 "-c", "shared_buffers=64MB"],
                stdout=log_fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                user=self.user, cwd=self.root)
        finally:
            os.close(log_fd)
        wait_for(self._ready, 60, f"postgres on port {self.port}")
        return self

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"postgres exited with {self.proc.returncode}:\n{self.log_text()}")
        try:
            self.execute("SELECT 1", database="postgres")
            return True
        except Exception as err:  # psycopg.OperationalError while starting up: not ready yet
            logger.debug("postgres not ready yet: %s", err)
            return False

    def execute(self, sql: str, params: tuple = (), database: str = "postgres") -> list[tuple]:
        import psycopg  # noqa: PLC0415 - only the test extra has it; imported where needed

        with psycopg.connect(f"{self.url}/{database}", autocommit=True, connect_timeout=5) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def create_database(self, prefix: str = "abx") -> str:
        """A fresh, empty database; returns its URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        self.execute(f"CREATE DATABASE {name}")
        return f"{self.url}/{name}"

    def restart(self, mode: int = signal.SIGQUIT) -> None:
        """Stop (immediate by default, like ``pg_ctl stop -m immediate``) and start again on the same port."""
        self.kill(mode)
        self.start()

    def stop(self) -> None:
        self.kill(signal.SIGQUIT)
        shutil.rmtree(self.root, ignore_errors=True)
