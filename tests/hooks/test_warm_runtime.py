"""Third-party Python hooks run warm: forks of a fork server in their own interpreter.

Real parts: the hooks' runtime (a virtualenv over a Python >= 3.12 of this machine, in the
session's lib dir), real fork servers in that interpreter, real hook processes; a Python
environment of its own for a plugin folder installed as a package.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db.models import F

from archivebox.binaries import hookrun, provision
from archivebox.binaries.models import Binary
from archivebox.binaries.provision import Unavailable
from archivebox.core.models import Machine, Process
from archivebox.hooks.discovery import parse_hook_name
from archivebox.hooks.pythons import environment_of, find_python
from archivebox.process import forkclient, forkserver, runner

from .util import make_snapshot, run_attempt, started_result, tick_result, wait_until

PLUGINS = Path(__file__).resolve().parent / "plugins"
INSTALL_TIMEOUT = 240


@pytest.fixture
def third_party(monkeypatch):
    monkeypatch.setattr(settings, "PLUGIN_DIRS", str(PLUGINS))
    # Servers outlive a test in this process; an earlier test's may have had its row closed
    # by that test's ticks (its owner sends no heartbeats here). Each test starts its own.
    forkclient.stop_all()
    yield
    forkclient.stop_all()


@pytest.fixture(scope="module")
def hook_python() -> Path:
    """The hooks' runtime interpreter (a virtualenv in the session's lib dir, made once)."""
    return provision.ensure_runtime(Machine.current(settings.ENGINE.machine_id), settings.ENGINE).python


def run_hook_of(plugin: str, hook_name: str) -> tuple:
    snapshot = make_snapshot(f"https://example.com/{plugin}/{time.monotonic_ns()}")
    result = started_result(snapshot, plugin, hook_name)
    row = run_attempt(result, timeout=INSTALL_TIMEOUT)
    return tick_result(result), row


def forkservers() -> dict[int, str]:
    return dict(Process.objects.filter(kind=Process.Kind.FORKSERVER, status="running").values_list("pid", "label"))


PROBE = textwrap.dedent("""\
    import json, os, signal, sys
    print(json.dumps({
        "name": __name__, "file": __file__, "argv": sys.argv, "cwd": os.getcwd(), "path": sys.path,
        "executable": sys.executable, "env": os.environ.get("ONLY"),
        "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
        "sigpipe": signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN, "own_session": os.getsid(0) == os.getpid(),
    }))
""")


def test_a_script_forked_in_its_own_interpreter_gets_what_python_script_py_gives_it(tmp_path, hook_python):
    script = tmp_path / "plugin" / "probe.py"
    script.parent.mkdir()
    script.write_text(PROBE)
    extra = tmp_path / "extra-site"
    extra.mkdir()
    env = {"PATH": os.environ["PATH"], "ONLY": "this", "PYTHONPATH": str(extra)}
    # The reference run starts as from a shell where Ctrl-C works: a test run in the background
    # (`.ci/run &`) has SIGINT ignored, which a fresh interpreter inherits and keeps.
    fresh = subprocess.run([str(hook_python), str(script), "--url=x"], cwd=tmp_path, env=env, capture_output=True, text=True, start_new_session=True,
                           timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert fresh.returncode == 0, fresh.stderr
    client = forkclient.ForkClient(str(hook_python), {"PYTHONPATH": str(extra)}, forkserver.THIRD_PARTY_PRELOAD)
    try:
        child = client.spawn_held([str(script), "--url=x"], str(tmp_path), env, tmp_path / "p.stdout.log", tmp_path / "p.stderr.log")
        child.release()
        assert child.wait(60) == 0, (tmp_path / "p.stderr.log").read_text()
    finally:
        client.stop()
    assert json.loads((tmp_path / "p.stdout.log").read_text()) == json.loads(fresh.stdout)
    assert runner.read_status(tmp_path / "p.exit") == 0


def test_a_third_party_python_hook_runs_as_a_fork_of_a_server_in_its_interpreter(third_party, hook_python):
    result, row = run_hook_of("py312fork", "on_Snapshot__10_py312fork.py")
    assert result.status == "succeeded", (result.output_str, row.reason)
    seen = result.output_json
    assert row.cmd[0] == seen["executable"] == str(hook_python) and seen["version"] >= [3, 12]
    assert row.pid == seen["pid"]  # its PID was on its row before it ran
    servers = forkservers()
    assert seen["ppid"] in servers and str(hook_python) in servers[seen["ppid"]]
    assert seen["pydantic_imported"]  # abx-plugins' shared modules (abxpkg's pydantic here) come preloaded
    assert seen["path0"] == str(PLUGINS / "py312fork") and seen["sigint_raises"] and seen["sigpipe_ignored"]
    assert runner.read_status(runner.status_path(row.stdout_path)) == 0

    # A second run is another fork of the same server.
    again, row2 = run_hook_of("py312fork", "on_Snapshot__10_py312fork.py")
    assert again.output_json["ppid"] == seen["ppid"] and row2.pid != row.pid


def test_forkserver_exclude_gives_a_plugins_hooks_a_new_interpreter_each_run(third_party, monkeypatch):
    monkeypatch.setattr(settings, "ENGINE", settings.ENGINE.__class__(**{**vars(settings.ENGINE), "forkserver_exclude": ("py312fork",)}))
    result, row = run_hook_of("py312fork", "on_Snapshot__10_py312fork.py")
    assert result.status == "succeeded", (result.output_str, row.reason)
    assert result.output_json["ppid"] == row.pid  # behind the sh gate, whose PID is on the row
    assert not result.output_json["pydantic_imported"]


def test_a_third_party_fork_ended_by_sigterm_records_its_exit_status(third_party, tmp_path, hook_python):
    script = tmp_path / "sleeper.py"
    script.write_text("import sys, time\nprint('started', flush=True)\ntime.sleep(60)\n")
    client = forkclient.ForkClient(str(hook_python), {}, forkserver.THIRD_PARTY_PRELOAD)
    try:
        child = client.spawn_held([str(script)], str(tmp_path), {"PATH": os.environ["PATH"]}, tmp_path / "s.stdout.log",
                                  tmp_path / "s.stderr.log")
        child.release()
        log = tmp_path / "s.stdout.log"
        wait_until(lambda: log.exists() and log.read_text(), timeout=30, message="the script to start")
        os.killpg(child.pid, signal.SIGTERM)
        assert child.wait(30) == -signal.SIGTERM
    finally:
        client.stop()
    assert runner.read_status(tmp_path / "s.exit") == 128 + signal.SIGTERM


def test_a_plugin_installed_in_an_environment_runs_under_its_interpreter_or_says_why_not(tmp_path):
    python, _ = find_python("==3.12.*")
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True, timeout=120)
    plugin = tmp_path / "env" / "lib" / "python3.12" / "site-packages" / "pkg" / "plugins" / "needs313"
    plugin.mkdir(parents=True)
    hook_file = plugin / "on_Snapshot__10_needs313.py"
    hook_file.write_text('# /// script\n# requires-python = ">=3.13"\n# ///\nprint("never")\n')
    found, version = environment_of(hook_file)
    assert found == tmp_path / "env" / "bin" / "python3.12" and (version.major, version.minor) == (3, 12)
    hook = parse_hook_name(hook_file, "needs313")
    machine = Machine.current(settings.ENGINE.machine_id)
    with pytest.raises(Unavailable) as raised:
        hookrun.plan(hook, {"PATH": os.environ["PATH"]}, machine, settings.ENGINE)
    assert str(raised.value) == (f"python: needs313/on_Snapshot__10_needs313.py requires-python >=3.13, but the environment it "
                                 f"is installed in ({found}) is Python {version}")
    assert environment_of(PLUGINS / "py312fork" / "on_Snapshot__10_py312fork.py") is None


def test_a_hooks_resolution_is_reused_until_what_it_depends_on_changes(third_party, monkeypatch, hook_python, tmp_path):
    plugin = tmp_path / "resolved"
    plugin.mkdir()
    config = plugin / "config.json"
    config.write_text(json.dumps({"required_binaries": [{"name": "{RESOLVED_FETCHER}", "binproviders": "env"}],
                                  "properties": {"RESOLVED_FETCHER": {"type": "string", "default": "wget"}}}))
    hook_file = plugin / "on_Snapshot__10_resolved.py"
    hook_file.write_text("#!/usr/bin/env -S abxpkg run --script --deps-from=./config.json:required_binaries python3\n"
                         '# /// script\n# requires-python = ">=3.12"\n# ///\nprint("hi")\n')
    hook = parse_hook_name(hook_file, "resolved")
    machine = Machine.current(settings.ENGINE.machine_id)
    calls = []
    ensure = provision.ensure
    monkeypatch.setattr(provision, "ensure", lambda *args, **kwargs: calls.append(args[0].name) or ensure(*args, **kwargs))
    hookrun.RESOLVED.clear()
    env = {"PATH": os.environ["PATH"], "RESOLVED_FETCHER": "wget"}

    first = hookrun.plan(hook, env, machine, settings.ENGINE)
    assert first.prefix == (str(hook_python),) and first.python and calls == ["wget"]
    assert hookrun.plan(hook, {**env, "SNAP_DIR": "/elsewhere"}, machine, settings.ENGINE).env["RESOLVED_FETCHER"] == first.env["RESOLVED_FETCHER"]
    assert calls == ["wget"]  # reused: nothing provisioned or looked up again

    config.write_text(config.read_text() + "\n")  # its --deps-from file changed
    hookrun.plan(hook, env, machine, settings.ENGINE)
    assert calls == ["wget", "wget"]
    hookrun.plan(hook, {**env, "RESOLVED_FETCHER": "curl"}, machine, settings.ENGINE)  # another value its declaration uses
    assert calls == ["wget", "wget", "curl"]
    Binary.objects.filter(name="wget").update(modified_at=F("modified_at") + dt.timedelta(seconds=1))
    hookrun.plan(hook, env, machine, settings.ENGINE)  # its Binary row was written (reinstalled, reset)
    assert calls == ["wget", "wget", "curl", "wget"]
    hook_file.write_text(hook_file.read_text() + "# edited\n")
    hookrun.plan(hook, env, machine, settings.ENGINE)
    assert calls == ["wget", "wget", "curl", "wget", "wget"]


def test_a_uv_run_script_hook_gets_uv_from_the_hooks_runtime(third_party):
    result, row = run_hook_of("uvscript", "on_Snapshot__10_uvscript.py")
    assert result.status == "succeeded", (result.output_str, row.reason, Path(row.stderr_path).read_text()[-2000:])
    assert result.output_str.startswith("uv ran python 3.1") and int(result.output_str.split(".")[1]) >= 12
    assert row.cmd[:5] == ["/usr/bin/env", "-S", "uv", "run", "--script"]
