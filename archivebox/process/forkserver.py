"""A pre-warmed fork server for Python hook scripts.

Starting a Python interpreter and importing what a hook needs costs 20-70 ms of CPU per
hook run, which dominates archiving cheap pages. The fork server is one interpreter,
started once per worker process, that has already imported the standard modules hooks
use; each hook run is a ``fork()`` of it that keeps the subprocess contract exactly:

* its own session and process group (``setsid``), so a timeout kills the whole group;
* its argv (``sys.argv``), environment (replaced, not merged), working directory,
  stdin from /dev/null, stdout and stderr to the given files;
* its exit code (``SystemExit``, an uncaught exception = 1, a signal = minus its number),
  reported back to the caller, who owns the Process row.

The server compiles each script once (again when the file changes) and the child runs
that code object as ``__main__``, as ``python script.py`` would: ``runpy.run_path`` in each
child cost about 2 ms of CPU per hook run (it probes the path as a zip file and a
package, then reads and compiles the script).

The server is single-threaded (forking a multi-threaded process is unsafe): it
multiplexes its listening socket, client connections and a SIGCHLD self-pipe in one
``select`` loop. The protocol, one JSON line each way per connection:

    client -> {"argv": [...], "cwd": "...", "env": {...}, "stdout": "path", "stderr": "path"}
    server -> {"pid": 1234}                     (or {"error": "..."} if it could not fork)
    server -> {"pid": 1234, "exit_code": 0}     (when the child exits)

A held request forks ahead of time, while the caller prepares the run (it reads its
rows, resolves the hook's config, writes its Process row):

    client -> {"hold": true, "script": "path"}   (the server forks: the child waits)
    server -> {"pid": 1234}
    client -> {"argv": [...], "cwd": ..., ...}   (the child opens its files, makes its folder)
    client -> g                                  (the child enters its folder, runs the script)
    server -> {"pid": 1234, "exit_code": 0}

Anything but ``g``, or a closed connection, ends a held child without running the script.

The engine's own server (``python -I -m archivebox.process.forkserver``) runs the built-in
hooks. A third-party Python hook whose file asks for another interpreter (abx-plugins':
Python >= 3.12) runs as a fork of a server in that interpreter, started by path with
``-P`` and :data:`AS_SCRIPT`: this module imports only the standard library, so it runs
under any Python 3.11 or newer, and each of its children becomes what ``python script.py``
would be (:func:`like_an_interpreter`).
(Shell and Node hooks are not run this way: a fork of this interpreter that then execs
another program took ~2.7 ms longer to run a trivial shell hook than a new process does.)
"""

from __future__ import annotations

import ast
import errno
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import traceback
import types

GO = b"g"
# The flag that makes a server's children what ``python script.py`` would be (a server in
# a third-party hook's own interpreter, started with ``-P`` by archivebox.process.forkclient).
AS_SCRIPT = "--as-script"
PRELOAD = (
    "json", "re", "time", "signal", "hashlib", "html", "html.parser", "urllib.parse", "socket", "ssl",
    "subprocess", "shutil", "tempfile", "pathlib", "zlib", "io", "xml.etree.ElementTree", "base64", "struct",
    "datetime", "codecs", "runpy",
    "pkgutil",  # runpy.run_path imports it on every call: 3 ms per hook run if each child did
)
# What a server in a third-party hook's interpreter is asked to preload (the client passes it
# in FORKSERVER_PRELOAD; it is kept here for tools that start a server without Django): what
# abx-plugins' hooks share, imported once per server instead of once per hook run (0.3-0.5
# CPU-s each on this machine): their helpers (``abx_plugins.plugins.base.utils``),
# pydantic, which those build a config model with (the parts it imports only when the first
# model is built, too), rich-click for their command line, abxpkg for their binaries, and
# the standard modules they use beyond the server's own. A module this interpreter cannot
# import (another plugin collection than abx-plugins) is left out, saying so in the
# server's log.
THIRD_PARTY_PRELOAD = (
    "abx_plugins.plugins.base.utils", "abx_plugins.plugins.base.url_cleaning", "pydantic", "pydantic.main",
    "pydantic.fields", "pydantic._internal._generate_schema", "pydantic.plugin._loader", "rich_click", "click", "abxpkg",
    "importlib.metadata", "urllib.request", "http.client", "enum", "typing", "locale", "encodings.idna", "unicodedata",
)
# What else a server imports comes from the client that starts it, in FORKSERVER_PRELOAD
# (the modules its kind of hooks share: see archivebox.process.forkclient), and from each
# script's own FORKSERVER_PRELOAD (see ScriptCache).


def preload() -> None:
    for name in PRELOAD:
        __import__(name)
    import_each(n.strip() for n in os.environ.get("FORKSERVER_PRELOAD", "").split(","))


def import_each(names) -> None:
    """Import the modules named, saying on stderr which cannot be (a script that imports
    one of them reports the error again, in its own log)."""
    for name in filter(None, names):
        try:
            __import__(name)
        except Exception as err:
            sys.stderr.write(f"forkserver: cannot preload {name}: {type(err).__name__}: {err}\n")


class ScriptCache:
    """Compiled hook scripts, keyed by path and checked against the file's identity on
    every use, so an edited script is read again.

    A script may name modules for the server to keep imported, in a top-level assignment
    of string literals: ``FORKSERVER_PRELOAD = ("archivebox.pluginkit.browser",)``. They are
    imported into the server the first time the script is asked for (that run waits for
    them), so every later run of it, and of any other script, starts with them: libraries
    only some hooks need cost nothing until one of those hooks runs."""

    def __init__(self):
        self._codes: dict[str, tuple[tuple, types.CodeType]] = {}
        self.preloaded: set[str] = set()

    def get(self, path: str) -> types.CodeType | None:
        """The script's code, or None (not an absolute path, unreadable, or not valid
        Python): the child then runs it through ``runpy``, which reports the error."""
        if not os.path.isabs(path):
            return None
        try:
            stat = os.stat(path)
            identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            cached = self._codes.get(path)
            if cached is not None and cached[0] == identity:
                return cached[1]
            with open(path, "rb") as script:
                tree = ast.parse(script.read(), path)
            code = compile(tree, path, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            return None
        self._codes[path] = (identity, code)
        self.preload(wanted_modules(tree))
        return code

    def preload(self, names: list[str]) -> None:
        new = [name for name in names if name not in self.preloaded]
        self.preloaded.update(new)
        import_each(new)


def wanted_modules(tree: ast.Module) -> list[str]:
    """The module names of a script's top-level ``FORKSERVER_PRELOAD = (...)``."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FORKSERVER_PRELOAD" for t in node.targets)
                and isinstance(node.value, (ast.Tuple, ast.List))):
            return [item.value for item in node.value.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return []


def run_script(path: str, code: types.CodeType | None) -> None:
    """Run the script as ``__main__``, with the globals ``python path`` gives it."""
    if code is None:
        runpy.run_path(path, run_name="__main__")
        return
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__=None, __spec__=None)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)  # noqa: S102 - the hook script itself, as the interpreter would run it


class CallerReader:
    """What a held child reads from its caller: the run's details (a JSON line), then the
    start byte. ``early``: bytes the server read past the request line. The socket is
    non-blocking (a flag shared with the server's copy), so it is read when select says so."""

    def __init__(self, fd: int, early: bytes = b""):
        self.fd = fd
        self.buffer = early

    def line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            if not self._more():
                return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def byte(self) -> bytes:
        while not self.buffer:
            if not self._more():
                return b""
        first, self.buffer = self.buffer[:1], self.buffer[1:]
        return first

    def _more(self) -> bool:
        select.select([self.fd], [], [])
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return True
        except OSError:
            return False
        self.buffer += chunk
        return bool(chunk)


def run_child(request: dict, script: types.CodeType | None = None, hold: int | None = None, early: bytes = b"",
              as_script: bool = False) -> None:
    """In the forked child: become the hook (``script``: its code, compiled by the server).
    ``hold``: the caller's connection, for a held child to read its details and the word
    to start from (``early``: what the server read of it already). ``as_script``: become
    what ``python script.py`` would be (see :func:`like_an_interpreter`) rather than
    ``python -I script.py`` with default signal dispositions. Never returns."""
    code = 1
    status = None  # where the exit code goes, once the script has started
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        if as_script:
            like_an_interpreter()
        caller = None
        if hold is not None:
            caller = CallerReader(hold, early)
            details = caller.line()
            if details is None:
                code = 0
                return  # called off before the details came: the script never starts
            compiled_for, request = request["script"], json.loads(details)
            if request["argv"][0] != compiled_for:
                script = None  # not the script compiled for it: the child reads it itself
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (devnull, out, err):
            os.close(fd)
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2 and int(name) != hold:
                try:
                    os.close(int(name))
                except OSError:
                    continue  # the descriptor of the listing itself, already gone
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        os.environ.clear()
        os.environ.update(request["env"])
        argv = request["argv"]
        sys.argv = list(argv)
        if caller is not None:
            os.makedirs(request["cwd"], exist_ok=True)  # while the caller writes its row (it makes it too)
            if caller.byte() != GO:
                code = 0
                return  # the caller gave up on this run: the script never starts
            os.close(hold)
        os.chdir(request["cwd"])  # after the word: a held child's folder may be made meanwhile
        if as_script:
            sys.path.insert(0, os.path.dirname(os.path.realpath(argv[0])))
        status = request.get("status")
        if status:
            record_every_exit(status)
        try:
            run_script(argv[0], script)
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if not isinstance(exit_.code, int) and exit_.code is not None:
                sys.stderr.write(f"{exit_.code}\n")
        except BaseException:  # noqa: BLE001 - report it as Python would, exit 1
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            if status:
                write_status(status, code & 0xFF)
        finally:
            REAL_EXIT(code & 0xFF)


def like_an_interpreter() -> None:
    """What a new interpreter starting a script sets up that a fork of this server lacks:
    SIGINT raising KeyboardInterrupt, SIGPIPE and SIGXFSZ ignored (writes fail with an error
    instead), and no memory of folders on ``sys.path`` that held nothing when the server
    looked (a binary installed since, on the hook's PYTHONPATH). The script's folder goes
    first on ``sys.path`` once its details are known (in :func:`run_child`)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for entry, finder in list(sys.path_importer_cache.items()):
        if finder is None:
            del sys.path_importer_cache[entry]
    importlib.invalidate_caches()


# The process's own _exit: a forked hook's os._exit is replaced (record_every_exit).
REAL_EXIT = os._exit


def record_every_exit(status: str) -> None:
    """However the forked hook ends, its status file says how, for whoever records its
    outcome once its worker (and this server) are gone: besides a return, ``sys.exit`` or
    an exception (the ``finally`` of :func:`run_child`), an ``os._exit`` of its own (a
    hook's SIGTERM handler often ends that way) and a SIGTERM left at its default, which
    still ends it as the signal would, recorded as a shell reports it (143). A hook that
    handles SIGTERM itself replaces the handler, and its exit is recorded as any other."""
    def exit_recorded(code: int) -> None:
        write_status(status, code & 0xFF)
        REAL_EXIT(code)

    def terminated(signum, frame):
        write_status(status, 128 + signum)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    os._exit = exit_recorded
    signal.signal(signal.SIGTERM, terminated)


def write_status(path: str, code: int) -> None:
    """The exit code, for whoever records the run if its watcher is gone by then."""
    with open(path, "w") as file:
        file.write(f"{code}\n")


class Server:
    def __init__(self, address: bytes, parent: int, as_script: bool = False):
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(address)
        self.listener.listen(128)
        self.clients: dict[socket.socket, bytes] = {}
        self.children: dict[int, socket.socket] = {}
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, self.on_child)
        signal.signal(signal.SIGTERM, self.stop)
        # The worker that started us, by the PID it gave (not our parent at this moment: a
        # worker killed while we were starting has already left us to init).
        self.parent = parent
        self.running = True
        self.scripts = ScriptCache()
        self.as_script = as_script

    def on_child(self, *_):
        try:
            os.write(self.wake_w, b"!")
        except BlockingIOError:
            return  # a wake-up is already pending

    def stop(self, *_):
        self.running = False

    def serve(self) -> None:
        while self.running or self.children:
            readable = [self.wake_r, *self.clients]
            if self.running:
                readable.append(self.listener)
            try:
                ready, _, _ = select.select(readable, [], [], 1.0)
            except InterruptedError:
                continue
            if os.getppid() != self.parent:
                # The worker that started us is gone. Its hooks run on in their own sessions
                # (a live worker adopts them by their Process rows, and each writes its exit
                # status itself); held children that were never told to run end by themselves.
                return
            for sock in ready:
                if sock is self.listener:
                    client, _ = self.listener.accept()
                    self.clients[client] = b""
                    # The client sends its request right after connecting: read it now if it
                    # is there (one pass through select less), else when select says so.
                    client.setblocking(False)
                    self.read_request(client)
                elif sock == self.wake_r:
                    os.read(self.wake_r, 4096)
                else:
                    self.read_request(sock)
            self.reap()
            if not self.running:
                for pid in list(self.children):
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        continue

    def read_request(self, client: socket.socket) -> None:
        try:
            chunk = client.recv(65536)
        except BlockingIOError:
            return  # nothing yet: select reports it when it comes
        except OSError:
            chunk = b""
        if not chunk:
            self.clients.pop(client, None)
            if client not in self.children.values():
                client.close()
            return
        buffer = self.clients[client] + chunk
        if b"\n" not in buffer:
            self.clients[client] = buffer
            return
        line, _, rest = buffer.partition(b"\n")
        self.clients.pop(client, None)
        try:
            request = json.loads(line)
            script = self.scripts.get(request["script"] if request.get("hold") else request["argv"][0])
            pid = os.fork()
        except (ValueError, KeyError, IndexError, TypeError, OSError) as err:
            self.send(client, {"error": f"{type(err).__name__}: {err}"})
            client.close()
            return
        if pid == 0:
            self.listener.close()
            run_child(request, script, hold=client.fileno() if request.get("hold") else None, early=rest, as_script=self.as_script)
        self.children[pid] = client
        self.send(client, {"pid": pid})

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            client = self.children.pop(pid, None)
            if client is not None:
                self.send(client, {"pid": pid, "exit_code": os.waitstatus_to_exitcode(status)})
                client.close()

    @staticmethod
    def send(client: socket.socket, message: dict) -> None:
        try:
            client.sendall(json.dumps(message).encode() + b"\n")
        except OSError as err:
            if err.errno not in (errno.EPIPE, errno.ECONNRESET):
                sys.stderr.write(f"forkserver: reply failed: {err}\n")


def main() -> None:
    address, parent = bytes.fromhex(sys.argv[1]), int(sys.argv[2])
    preload()
    server = Server(address, parent, as_script=AS_SCRIPT in sys.argv[3:])
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    server.serve()


if __name__ == "__main__":
    main()
