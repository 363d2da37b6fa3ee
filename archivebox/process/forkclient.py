"""The worker's side of the fork server: start it once, ask it to run Python hooks.

See :mod:`archivebox.process.forkserver` for the contract each forked hook keeps. The
server runs as a Process row (kind ``forkserver``) under this worker; it is started on
the first Python hook and again if it ever dies.
"""

from __future__ import annotations

import json
import logging
import os
import re
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
from archivebox.process import forkserver
from archivebox.process.forkserver import GO
from archivebox.process.registry import current_worker

logger = logging.getLogger(__name__)

START_TIMEOUT = 10.0
# What the built-in hooks import: their kit (``archivebox.pluginkit``, whose modules import
# only os and sys at load time), urllib.request for its HTTP client and psutil for killing
# a program's tree. Every preloaded module is resident in every forked hook (urllib.request
# with http.client and email: about 1.8 MB), but a hook that needs it would otherwise import
# it itself, paying the same memory plus 10-20 ms of CPU. Libraries that only some hooks
# use (readability: lxml; the browser hook: asyncio and its CDP client) are not preloaded
# up front: a script names them in its own FORKSERVER_PRELOAD (see forkserver.ScriptCache),
# or the FORKSERVER_PRELOAD setting names them for every fork server.
ENGINE_PRELOAD = ("urllib.request", "http.client", "psutil", "archivebox.pluginkit")
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
        self.held = False  # waits for release() before it runs its script

    def release(self) -> None:
        """Let a held child run its script: its PID is recorded by now."""
        if self.held:
            try:
                self.sock.sendall(GO)
            except OSError as err:
                raise ForkServerError(f"fork server: could not release pid {self.pid}: {err}") from err

    def cancel(self) -> None:
        """The run is off: a held child ends without running its script (this closes the
        connection, which also ends the wait for an ungated one's exit code)."""
        self.sock.close()

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
    """A fork asked of the server; :meth:`start` returns it running. A held fork (see
    :meth:`ForkClient.hold`) needs its details (:meth:`prepare`) before it starts."""

    def __init__(self, client: ForkClient, sock: socket.socket, argv: Sequence[str], held: bool):
        self._client = client
        self._sock = sock
        self._argv = list(argv)
        self._held = held

    def prepare(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path,
                status: Path | None = None) -> None:
        """Send a held child its run: it opens its files and makes ``cwd`` meanwhile."""
        self._argv = list(argv)
        self._send(_details(argv, cwd, env, stdout, stderr, status))

    def start(self) -> ForkedProcess:
        """The forked child (its PID): a held one still waits for :meth:`release`."""
        sock = self._sock
        try:
            sock.settimeout(START_TIMEOUT)
            reply = b""
            while b"\n" not in reply:
                chunk = sock.recv(4096)
                if not chunk:
                    raise ForkServerError("the fork server closed the connection")
                reply += chunk
        except OSError as err:
            self._fail(err)
        line, _, rest = reply.partition(b"\n")
        message = json.loads(line)
        if "error" in message:
            sock.close()
            raise ForkServerError(f"fork server could not fork: {message['error']}")
        forked = ForkedProcess(sock, int(message["pid"]), self._argv)
        forked._buffer = rest
        forked.held = self._held
        return forked

    def cancel(self) -> None:
        """The run is off: a held child ends without running the script."""
        self._sock.close()

    def _send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as err:
            self._fail(err)

    def _fail(self, err: OSError) -> None:
        self._sock.close()
        self._client._forget()
        if isinstance(err, ForkServerError):
            raise err
        raise ForkServerError(f"fork server: {err}") from err


def _details(argv: Sequence[str], cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path, status: Path | None = None) -> bytes:
    details = {"argv": list(argv), "cwd": cwd, "env": dict(env), "stdout": str(stdout), "stderr": str(stderr)}
    if status is not None:
        details["status"] = str(status)
    return json.dumps(details).encode() + b"\n"


class ForkClient:
    """One fork server of this worker, started on first use (again if it died).

    ``interpreter`` None: the engine's own (``python -I``), for the built-in hooks. Else a
    third-party hook's interpreter, whose children become what ``python script.py`` would
    be (:data:`forkserver.AS_SCRIPT`); ``startup_env``: the variables that interpreter reads
    at start-up (``PYTHONPATH``, locale, ...), which its hooks share."""

    def __init__(self, interpreter: str | None = None, startup_env: Mapping[str, str] | None = None,
                 preload: Sequence[str] = ENGINE_PRELOAD):
        self.interpreter = interpreter
        self.startup_env = dict(startup_env or {})
        self.preload = tuple(preload)
        self._lock = threading.Lock()
        self._address: bytes | None = None
        self._row: Process | None = None
        self._handle = None
        self._failed_at = float("-inf")

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path) -> ForkedProcess:
        """Fork a hook: ``argv[0]`` is the script; raises ForkServerError if the server failed."""
        return self._ask(_details(argv, cwd, env, stdout, stderr), argv, held=False).start()

    def spawn_held(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path) -> ForkedProcess:
        """Fork a hook held: it opens its files and makes ``cwd``, then waits for
        :meth:`ForkedProcess.release` (or ends unrun on :meth:`ForkedProcess.cancel`), and
        writes its exit code to :func:`runner.status_path` of ``stdout``."""
        pending = self.hold(argv[0])
        pending.prepare(argv, cwd, env, stdout, stderr, runner.status_path(stdout))
        return pending.start()

    def hold(self, script: str) -> PendingFork:
        """Fork ahead of time a child that will run ``script``: it waits for
        :meth:`PendingFork.prepare` and :meth:`PendingFork.start` (or ends without running
        the script on :meth:`PendingFork.cancel`)."""
        return self._ask(json.dumps({"hold": True, "script": script}).encode() + b"\n", [str(script)], held=True)

    def _ask(self, request: bytes, argv: Sequence[str], held: bool) -> PendingFork:
        address = self._ensure()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(address)
            sock.sendall(request)
        except OSError as err:
            sock.close()
            self._forget()
            raise ForkServerError(f"fork server: {err}") from err
        return PendingFork(self, sock, argv, held)

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
            if self.interpreter is None:
                cmd = [sys.executable, "-I", "-m", "archivebox.process.forkserver", address.hex(), str(os.getpid())]
                label = "fork server"
            else:
                # -P: no folder of the server's own on sys.path (each child puts its script's first).
                cmd = [self.interpreter, "-P", forkserver.__file__, address.hex(), str(os.getpid()), forkserver.AS_SCRIPT]
                label = f"fork server {self.interpreter}"
            env = {**runner.base_env(), **self.startup_env}
            preload = [*self.preload, *settings.ENGINE.forkserver_preload]
            if preload:
                env["FORKSERVER_PRELOAD"] = ",".join(preload)
            row, _ = runner.create(kind=Process.Kind.FORKSERVER, cmd=cmd, pwd=str(settings.DATA_DIR), env=env, timeout=None,
                                   machine=Machine.current(settings.ENGINE.machine_id), parent=current_worker(), label=label[:255])
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


def spawn_held(cmd: list, cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path):
    """A :data:`runner.Spawner` for a built-in Python hook (``[python, -I, script, args...]``):
    a held fork of the pre-warmed server; a fresh interpreter behind :data:`runner.GATE`
    (held the same way) if the server is unavailable."""
    try:
        return CLIENT.spawn_held(cmd[2:], cwd, env, stdout, stderr)
    except ForkServerError as err:
        logger.warning("%s; running %s in a new interpreter", err, Path(cmd[2]).name)
        return runner.gated_spawner(cmd, cwd, env, stdout, stderr)


# Third-party hooks: a fork server per interpreter ---------------------------------------

# What an interpreter reads from its environment when it starts: hooks whose values differ
# (another PYTHONPATH: the packages their binaries brought) get a server of their own,
# started with them, so each child has the sys.path a new interpreter would have.
STARTUP_ENV = re.compile(r"^(PYTHON[A-Z0-9_]*|LANG|LANGUAGE|LC_[A-Z]+)$")

_SERVERS: dict[tuple, ForkClient] = {}
_SERVERS_LOCK = threading.Lock()


def server_for(interpreter: str, env: Mapping[str, str]) -> ForkClient:
    """This worker's fork server for hooks run by ``interpreter`` with ``env``'s start-up variables."""
    startup = {key: value for key, value in env.items() if STARTUP_ENV.match(key)}
    key = (interpreter, tuple(sorted(startup.items())))
    with _SERVERS_LOCK:
        client = _SERVERS.get(key)
        if client is None:
            client = _SERVERS[key] = ForkClient(interpreter, startup, forkserver.THIRD_PARTY_PRELOAD)
        return client


def spawn_held_as_script(cmd: list, cwd: str, env: Mapping[str, str], stdout: Path, stderr: Path):
    """A :data:`runner.Spawner` for a third-party Python hook (``[interpreter, script, args...]``,
    as its shebang resolved): a held fork of a server in that interpreter; a fresh
    interpreter behind :data:`runner.GATE` if the server is unavailable."""
    try:
        return server_for(cmd[0], env).spawn_held(cmd[1:], cwd, env, stdout, stderr)
    except ForkServerError as err:
        logger.warning("%s; running %s in a new interpreter", err, Path(cmd[1]).name)
        return runner.gated_spawner(cmd, cwd, env, stdout, stderr)


def stop_all() -> None:
    """Stop this worker's fork servers (with the worker)."""
    CLIENT.stop()
    with _SERVERS_LOCK:
        clients = list(_SERVERS.values())
        _SERVERS.clear()
    for client in clients:
        client.stop()
