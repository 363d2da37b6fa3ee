"""The worker's side of the fork server: start it once, ask it to run Python hooks.

See :mod:`archivebox.process.forkserver` for the contract each forked hook keeps. The
server runs as a Process row (kind ``forkserver``) under this worker; it is started on
the first Python hook and again if it ever dies.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from django.conf import settings

from archivebox.core.models import Machine, Process
from archivebox.process import runner
from archivebox.process.forkserver import GO
from archivebox.process.registry import current_worker

logger = logging.getLogger(__name__)

START_TIMEOUT = 10.0
# How often a hook whose fork server died is checked for its exit.
ORPHAN_POLL = 0.05
# After the server failed to start, hooks run in fresh interpreters for this long.
RETRY_START_AFTER = 60.0


class ForkServerError(OSError):
    """The fork server could not run the hook (it is restarted on the next one)."""


class ForkedProcess:
    """A hook forked by the server: Popen's ``pid`` and ``wait`` over the server's socket."""

    def __init__(self, sock: socket.socket, pid: int, argv: Sequence[str]):
        self.sock = sock
        self.pid = pid
        self.args = list(argv)
        self.returncode: int | None = None
        self._orphaned = False  # the server died first: the exit code is lost
        self._buffer = b""

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code. If the server dies first, the child (in its own group) is watched
        by its PID instead, and its exit code, which only the server could read, is None."""
        if self.returncode is not None:
            return self.returncode
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._orphaned and b"\n" not in self._buffer:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(4096)
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            if not chunk:
                self.sock.close()
                self._orphaned = True
            self._buffer += chunk
        if self._orphaned:
            while runner.is_running(self.pid, None):
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                time.sleep(ORPHAN_POLL if remaining is None else max(0.0, min(ORPHAN_POLL, remaining)))
            return None
        message = json.loads(self._buffer.partition(b"\n")[0])
        self.returncode = int(message["exit_code"])
        self.sock.close()
        return self.returncode

class PendingFork:
    """A fork asked of the server; :meth:`start` lets a held child run and returns it."""

    def __init__(self, client: ForkClient, sock: socket.socket, argv: Sequence[str], hold: bool):
        self._client = client
        self._sock = sock
        self._argv = list(argv)
        self._hold = hold

    def start(self) -> ForkedProcess:
        sock = self._sock
        try:
            if self._hold:
                sock.sendall(GO)
            sock.settimeout(START_TIMEOUT)
            reply = b""
            while b"\n" not in reply:
                chunk = sock.recv(4096)
                if not chunk:
                    raise ForkServerError("the fork server closed the connection")
                reply += chunk
        except OSError as err:
            sock.close()
            self._client._forget()
            if isinstance(err, ForkServerError):
                raise
            raise ForkServerError(f"fork server: {err}") from err
        line, _, rest = reply.partition(b"\n")
        message = json.loads(line)
        if "error" in message:
            sock.close()
            raise ForkServerError(f"fork server could not fork: {message['error']}")
        forked = ForkedProcess(sock, int(message["pid"]), self._argv)
        forked._buffer = rest
        return forked

    def cancel(self) -> None:
        """The run is off: a held child ends without running the script."""
        self._sock.close()


class ForkClient:
    def __init__(self):
        self._lock = threading.Lock()
        self._address: bytes | None = None
        self._row: Process | None = None
        self._handle = None
        self._failed_at = float("-inf")

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path) -> ForkedProcess:
        """Fork a hook: ``argv[0]`` is the script; raises ForkServerError if the server failed."""
        return self.request(argv, cwd, env, stdout, stderr).start()

    def request(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path,
                hold: bool = False) -> PendingFork:
        """Ask for a fork without waiting for it. With ``hold`` the child gets ready and
        waits for :meth:`PendingFork.start` before it runs the script (or ends without
        running it on :meth:`PendingFork.cancel`). ``cwd`` must exist by then."""
        address = self._ensure()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(address)
            request = {"argv": list(argv), "cwd": cwd, "env": dict(env), "stdout": str(stdout), "stderr": str(stderr), "hold": hold}
            sock.sendall(json.dumps(request).encode() + b"\n")
        except OSError as err:
            sock.close()
            self._forget()
            raise ForkServerError(f"fork server: {err}") from err
        return PendingFork(self, sock, argv, hold)

    def stop(self) -> None:
        with self._lock:
            if self._row is not None and self._handle is not None:
                runner.terminate(runner.Running(self._row, self._handle), grace=2.0)
                runner.finish(self._row, self._handle.returncode, "stopped with its worker")
            self._address = self._row = self._handle = None

    def _forget(self) -> None:
        with self._lock:
            if self._handle is not None and self._handle.poll() is not None:
                runner.finish(self._row, self._handle.returncode, "exited")
                self._address = self._row = self._handle = None

    def _ensure(self) -> bytes:
        with self._lock:
            if self._address is not None and self._handle is not None and self._handle.poll() is None:
                return self._address
            if time.monotonic() - self._failed_at < RETRY_START_AFTER:
                raise ForkServerError("the fork server failed to start recently")
            address = f"\0archivebox-forkserver-{os.getpid()}-{secrets.token_hex(6)}".encode()
            plugins_dir = Path(__file__).resolve().parent.parent / "plugins"
            cmd = [sys.executable, "-I", "-m", "archivebox.process.forkserver", address.hex(), str(plugins_dir)]
            env = {**runner.base_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
            if os.environ.get("FORKSERVER_PRELOAD"):
                env["FORKSERVER_PRELOAD"] = os.environ["FORKSERVER_PRELOAD"]
            row, _ = runner.create(kind=Process.Kind.FORKSERVER, cmd=cmd, pwd=str(settings.DATA_DIR), env=env, timeout=None,
                                   machine=Machine.current(settings.ENGINE.machine_id), parent=current_worker(), label="fork server")
            running = runner.launch(row, env)
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    probe.connect(address)
                    break
                except OSError:
                    if running.handle.poll() is not None or time.monotonic() > deadline:
                        runner.terminate(running, grace=1.0)
                        runner.finish(row, running.handle.returncode, "failed to start")
                        self._failed_at = time.monotonic()
                        raise ForkServerError(f"the fork server did not start (see {row.stderr_path})") from None
                    time.sleep(0.01)
                finally:
                    probe.close()
            self._address, self._row, self._handle = address, row, running.handle
            logger.info("fork server started (pid %s)", running.pid)
            return address


CLIENT = ForkClient()
