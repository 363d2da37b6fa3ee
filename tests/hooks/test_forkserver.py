"""The fork server runs a Python hook as ``python -I script.py`` would: the same globals,
argv, working directory, environment, session and exit code, and the script as it is on
disk now (it compiles each script once and again when the file changes)."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from archivebox.process import forkclient


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
