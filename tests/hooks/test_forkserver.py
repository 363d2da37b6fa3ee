"""The fork server runs a Python hook as ``python -I script.py`` would: the same globals,
argv, working directory, environment, session and exit code, and the script as it is on
disk now (it compiles each script once and again when the file changes)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from archivebox.process import forkclient, forkserver

from .util import kill_quietly, pid_dead, wait_until


@pytest.fixture
def fork(tmp_path):
    client = forkclient.ForkClient()

    def run(script, *args, env=None):
        """Run ``script`` through the server; returns (exit code, stdout, stderr)."""
        out, err = tmp_path / "out.log", tmp_path / "err.log"
        child = client.spawn([str(script), *args], str(tmp_path), env or {"PATH": os.environ.get("PATH", "")}, out, err)
        code = child.wait(30)
        return code, out.read_text(), err.read_text()

    yield run
    client.stop()


def write(path, body: str):
    path.write_text(textwrap.dedent(body))
    return path


def test_a_forked_script_gets_what_an_interpreter_would_give_it(fork, tmp_path):
    script = write(tmp_path / "probe.py", """\
        import json, os, sys
        print(json.dumps({
            "name": __name__, "file": __file__, "main": sys.modules["__main__"].__dict__ is globals(),
            "package": __package__, "spec": __spec__, "argv": sys.argv, "cwd": os.getcwd(),
            "env": sorted(os.environ), "own_session": os.getsid(0) == os.getpid(),
        }))
    """)
    code, out, err = fork(script, "--url=https://example.com/?a=1&b='x'", env={"ONLY": "this"})
    assert code == 0, err
    seen = json.loads(out)
    assert seen == {"name": "__main__", "file": str(script), "main": True, "package": None, "spec": None,
                    "argv": [str(script), "--url=https://example.com/?a=1&b='x'"], "cwd": str(tmp_path),
                    "env": ["ONLY"], "own_session": True}


def test_exit_codes_and_errors_come_back_as_from_an_interpreter(fork, tmp_path):
    assert fork(write(tmp_path / "three.py", "import sys\nsys.exit(3)\n"))[0] == 3
    code, _, err = fork(write(tmp_path / "boom.py", "raise RuntimeError('boom')\n"))
    assert code == 1 and "RuntimeError: boom" in err and "boom.py" in err
    code, _, err = fork(write(tmp_path / "broken.py", "def f(:\n"))
    assert code == 1 and "SyntaxError" in err


def test_an_edited_script_runs_as_edited(fork, tmp_path):
    script = write(tmp_path / "edited.py", "print('first')\n")
    assert fork(script)[1] == "first\n"
    write(script, "print('second version')\n")
    assert fork(script)[1] == "second version\n"
    write(script, "def f(:\n")
    assert fork(script)[0] == 1
    write(script, "print('fixed')\n")
    assert fork(script)[1] == "fixed\n"


def test_a_script_does_not_inherit_the_servers_future_imports(fork, tmp_path):
    """The server module uses ``from __future__ import annotations``; a script compiled
    there must still get real annotation objects, as under a plain interpreter."""
    script = write(tmp_path / "annotations.py", "def f(x: int): pass\nprint(f.__annotations__['x'] is int)\n")
    assert fork(script)[1] == "True\n"


def test_a_held_fork_runs_the_script_only_when_started(tmp_path):
    """A held child is ready (its files open, its working directory made) but runs nothing
    until the caller starts it; called off, it ends without running the script."""
    client = forkclient.ForkClient()
    script = write(tmp_path / "mark.py", "import os, pathlib, sys\npathlib.Path(sys.argv[1]).write_text(os.getcwd())\n")
    env = {"PATH": os.environ.get("PATH", "")}
    later = tmp_path / "made-later"
    try:
        held, off, early_off = client.hold(str(script)), client.hold(str(script)), client.hold(str(script))
        held.prepare([str(script), str(tmp_path / "started")], str(later), env, tmp_path / "o1", tmp_path / "e1")
        off.prepare([str(script), str(tmp_path / "called-off")], str(tmp_path), env, tmp_path / "o2", tmp_path / "e2")
        early_off.cancel()  # before it even got its details
        wait_until(lambda: (tmp_path / "o2").exists() and later.is_dir(), timeout=10, message="both children to be ready")
        assert not (tmp_path / "started").exists()
        off.cancel()
        child = held.start()
        assert child.pid > 0 and not (tmp_path / "started").exists()  # its PID is known before it runs
        child.release()
        assert child.wait(30) == 0
        assert (tmp_path / "started").read_text() == str(later)
        assert not (tmp_path / "called-off").exists()
    finally:
        client.stop()


def test_details_and_start_word_read_with_the_request_are_not_lost(tmp_path):
    """The server may read a held child's details and start word in the same read as the
    request (a caller quicker than the server): the child must still start (it used to
    wait forever)."""
    client = forkclient.ForkClient()
    script = write(tmp_path / "quick.py", "print('ran')\n")
    try:
        address = client._ensure()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(address)
            details = {"argv": [str(script)], "cwd": str(tmp_path), "env": {}, "stdout": str(tmp_path / "out"), "stderr": str(tmp_path / "err")}
            sock.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in ({"hold": True, "script": str(script)}, details))
                         + forkserver.GO)
            sock.settimeout(30)
            replies = b""
            while replies.count(b"\n") < 2:
                chunk = sock.recv(4096)
                assert chunk, "the server closed the connection before the child ended"
                replies += chunk
        pid, ended = (json.loads(line) for line in replies.splitlines())
        assert ended == {"pid": pid["pid"], "exit_code": 0}
        assert (tmp_path / "out").read_text() == "ran\n"
    finally:
        client.stop()


def test_a_hook_outliving_its_fork_server_is_still_waited_for(tmp_path):
    """If the server dies first, the hook is watched by its PID: a wait still times out
    while it runs, and once it is gone every wait says its exit code is unknown (a second
    wait used to fail on the closed connection)."""
    client = forkclient.ForkClient()
    script = write(tmp_path / "sleeper.py", "import time\ntime.sleep(60)\n")
    try:
        child = client.spawn([str(script)], str(tmp_path), {}, tmp_path / "out", tmp_path / "err")
        os.kill(client._handle.pid, signal.SIGKILL)
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(0.3)
        os.killpg(child.pid, signal.SIGKILL)
        assert child.wait(30) is None
        assert child.wait(1) is None
    finally:
        client.stop()


def test_a_held_child_runs_the_script_its_details_name(tmp_path):
    """Held for one script but told to run another, a child runs the one it was told."""
    client = forkclient.ForkClient()
    first, second = write(tmp_path / "first.py", "print('first')\n"), write(tmp_path / "second.py", "print('second')\n")
    try:
        held = client.hold(str(first))
        held.prepare([str(second)], str(tmp_path), {}, tmp_path / "out", tmp_path / "err")
        child = held.start()
        child.release()
        assert child.wait(30) == 0
        assert (tmp_path / "out").read_text() == "second\n"
    finally:
        client.stop()



def test_a_script_names_modules_the_server_keeps_imported(fork, tmp_path):
    """``FORKSERVER_PRELOAD = (...)`` at a script's top level: the server imports those
    modules the first time it is asked for the script, before forking it, so that run and
    every later run of any script start with them; a name that cannot be imported is
    left to the script."""
    probe = "import sys\nprint(sorted(m for m in ('colorsys', 'wave') if m in sys.modules))\n"
    plain = write(tmp_path / "plain.py", probe)
    assert fork(plain)[1] == "[]\n"  # neither is imported by the server up front
    wanting = write(tmp_path / "wanting.py", "FORKSERVER_PRELOAD = ('colorsys', 'no_such_module_here')\n" + probe)
    assert fork(wanting)[:2] == (0, "['colorsys']\n")
    assert fork(plain)[1] == "['colorsys']\n"
    # only a top-level assignment of string literals counts
    elsewhere = write(tmp_path / "elsewhere.py", "def f():\n    FORKSERVER_PRELOAD = ('wave',)\n" + probe)
    assert fork(elsewhere)[1] == "['colorsys']\n"


def test_a_server_whose_worker_died_while_it_started_exits(tmp_path):
    """Regression: a worker SIGKILLed right after it launched its fork server left the server
    to init before the server noted its parent, so the server took init for its worker and
    never saw it go (the chaos test's random kills left one running). The worker now passes
    its PID."""
    address = f"\0archivebox-forkserver-test-{os.getpid()}-{tmp_path.name}".encode().hex()
    # sh starts the server in the background, says its PID, and is killed at once: the server
    # is still importing when its worker is gone.
    launcher = subprocess.run(
        ["sh", "-c", f'"$0" -I -m archivebox.process.forkserver {address} $$ >/dev/null 2>&1 & echo $!; kill -9 $$',
         sys.executable], capture_output=True, text=True, timeout=30)
    server = int(launcher.stdout.split()[0])
    try:
        wait_until(lambda: pid_dead(server), timeout=15, message="the orphaned fork server to exit")
    finally:
        kill_quietly(server)
