"""Regression tests for hook-runner bugs found by the hook tests (each one fixed)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from django.conf import settings
from django.utils import timezone

from archivebox.config import ConfigError
from archivebox.core.models import ArchiveResult, Machine, Process
from archivebox.hooks.config import coerce
from archivebox.hooks.discovery import find_hooks, find_plugins
from archivebox.process import forkclient, runner
from archivebox.sideeffects import hooks as hook_effects
from archivebox.sideeffects.hooks import run_hook
from archivebox.sideeffects.hooks import sweep_machine

from .util import (
    collection, kill_quietly, make_snapshot, pid_dead, results, run_attempt, run_pools,
    started_result, tick_result, unfinished, wait_all_dead, wait_until,
)

PY = sys.executable


def machine() -> Machine:
    return Machine.current(settings.ENGINE.machine_id)


def launch(cmd, pwd: Path) -> runner.Running:
    pwd.mkdir(parents=True, exist_ok=True)
    row, _ = runner.create(kind=Process.Kind.HOOK, cmd=cmd, pwd=pwd, env=runner.base_env(), timeout=None, machine=machine(), label="t")
    return runner.launch(row, runner.base_env())


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


# Foreground `archivebox add` and background hooks ------------------------------------------

def test_foreground_add_records_the_result_of_a_crawl_background_hook(tmp_path):
    coll = collection(tmp_path, "h_crawl", HOOK_KILL_GRACE="4", H_CRAWL_STOP_SECONDS="1.5")
    try:
        coll.cli("add", "https://example.com/fg-crawl")
    finally:
        for daemon_file in (coll.root / "crawls").glob("*/h_crawl/daemon.json"):
            kill_quietly(json.loads(daemon_file.read_text())["pid"])
    [daemon] = coll.query("SELECT status, output_str FROM core_archiveresult WHERE hook_name='on_Crawl__10_daemon.daemon.bg.py'")
    assert (daemon["status"], daemon["output_str"]) == ("succeeded", "daemon stopped at the crawl's cleanup")
    assert unfinished(coll) == 0


# Descendants outliving their Process row ------------------------------------------------------

def test_no_descendant_outlives_a_hook_that_exits_on_its_own(tmp_path):
    running = launch(["sh", "-c", "sleep 60 & echo $! > kid; echo done"], tmp_path)
    try:
        assert runner.wait(running, timeout=10, grace=0.5) == (0, None)
        kid = int((tmp_path / "kid").read_text())
        assert runner.finish(running.row, 0)
        wait_until(lambda: pid_dead(kid), timeout=1.5, message="the hook's left-behind child to be stopped")
    finally:
        if (tmp_path / "kid").exists():
            kill_quietly(int((tmp_path / "kid").read_text()))


def test_the_sweep_kills_the_group_of_an_orphaned_hook_whose_leader_already_exited(tmp_path):
    dead_worker = Process.objects.create(kind=Process.Kind.WORKER, machine=machine(), status="exited", retry_at=None)
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $! > kid"], cwd=tmp_path, start_new_session=True)
    started = runner.start_time(leader.pid)
    leader.wait()
    kid = int(wait_until(lambda: (tmp_path / "kid").read_text().strip() if (tmp_path / "kid").exists() else None, timeout=5))
    try:
        row = Process.objects.create(kind=Process.Kind.HOOK, machine=machine(), parent=dead_worker, status="running",
                                     pid=leader.pid, pid_started=started, pwd=str(tmp_path), retry_at=timezone.now())
        sweep_machine(machine(), grace=0.3)
        row.refresh_from_db()
        assert row.status == "exited" and row.exit_code is None
        wait_until(lambda: pid_dead(kid), timeout=1.5, message="the orphan's child to be killed")
    finally:
        kill_quietly(kid)


def test_with_the_fork_server_a_sigkilled_consumers_hook_is_adopted_and_its_daemon_stopped_with_it(tmp_path):
    """A forked hook outlives its SIGKILLed worker: the next worker adopts it (its row names
    the new worker) instead of killing it, and stopping that worker stops its whole family."""
    coll = collection(tmp_path, "h_hang", H_HANG_TIMEOUT="120", HOOK_MAX_ATTEMPTS="1", SWEEP_INTERVAL="600", FORKSERVER="true",
                      HOOK_STOP_GRACE="0.5")
    coll.cli("add", "--bg", "https://example.com/forked-orphan")
    coll.start_consumer("ticks", 2)
    first = coll.start_consumer("sideeffects", 4)
    family: dict[str, int] = {}
    try:
        def ready():
            rows = coll.query("SELECT pwd FROM core_process WHERE kind='hook' AND status='running'")
            return rows and (Path(rows[0]["pwd"]) / "ready").exists() and Path(rows[0]["pwd"])
        folder = wait_until(ready, timeout=30, message="the hook to record its descendants")
        family = {kind: int(pid) for kind, pid in (line.split() for line in (folder / "descendants.txt").read_text().splitlines())}
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        second = coll.start_consumer("sideeffects", 4)
        adopted = ("SELECT w.pid FROM core_process h JOIN core_process w ON h.parent_id = w.id "
                   "WHERE h.kind='hook' AND h.status='running'")
        wait_until(lambda: coll.scalar(adopted) == second.pid, timeout=20, message="the new worker to adopt the hook")
        assert not any(pid_dead(pid) for pid in family.values())
        second.send_signal(signal.SIGINT)
        second.wait(timeout=60)
        wait_all_dead(family, 3, "the adopted hook's family to die with its stop")
        assert coll.scalar("SELECT status FROM core_process WHERE kind='hook'") == "exited"
    finally:
        kill_quietly(*family.values())
        coll.stop_all(signal.SIGINT)


# Signals: other hooks' .pid files, repeated SIGTERM, grace for descendants -----------------------

def test_stopping_one_hook_does_not_touch_a_sibling_hook_that_wrote_a_pid_file(tmp_path):
    sibling_script = write(tmp_path / "scripts" / "sibling.py", """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open("sibling.pid", "w").write(str(os.getpid()))
        while True:
            time.sleep(0.05)
    """)
    folder = tmp_path / "plugin_folder"
    sibling = launch([PY, "-I", sibling_script], folder)
    try:
        wait_until(lambda: (folder / "sibling.pid").exists(), timeout=10, message="the sibling's pid file")
        other = launch(["sleep", "60"], folder)
        runner.terminate(other, grace=0.3)
        if pid_dead(sibling.pid):
            code, stop = runner.wait(sibling, timeout=1)
            pytest.fail(f"the sibling hook was stopped too, and its own wait reports exit code {code!r} ({stop.text if stop else 'a natural exit'})")
    finally:
        if not pid_dead(sibling.pid):
            runner.terminate(sibling, grace=0.2)


def test_terminate_sends_one_sigterm(tmp_path, monkeypatch):
    """The real signals are sent; a spy on os.killpg / psutil's send_signal counts, per process, how many
    SIGTERMs were aimed at it (a signal-counting hook cannot: the kernel merges a pending duplicate)."""
    running = launch(["sh", "-c", "sleep 60 & wait"], tmp_path)
    wait_until(lambda: psutil.Process(running.pid).children(), timeout=10, message="the hook's child")
    members = {p.pid for p in [psutil.Process(running.pid), *psutil.Process(running.pid).children(recursive=True)]}
    aimed: dict[int, int] = {}
    real_killpg, real_send = os.killpg, psutil.Process.send_signal

    def killpg(pgid, sig):
        if sig == signal.SIGTERM:
            for pid in members:
                aimed[pid] = aimed.get(pid, 0) + 1
        return real_killpg(pgid, sig)

    def send_signal(proc, sig):
        if sig == signal.SIGTERM:
            aimed[proc.pid] = aimed.get(proc.pid, 0) + 1
        return real_send(proc, sig)

    monkeypatch.setattr(os, "killpg", killpg)
    monkeypatch.setattr(psutil.Process, "send_signal", send_signal)
    runner.terminate(running, grace=1)
    assert aimed == {pid: 1 for pid in members}


def test_descendants_get_the_grace_period_too(tmp_path):
    child = write(tmp_path / "child.py", """
        import signal, sys, time
        def on_term(*args):
            time.sleep(0.4)
            open("clean", "w").close()
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)
        open("ready", "w").close()
        while True:
            time.sleep(0.05)
    """)
    running = launch(["sh", "-c", f'"{PY}" -I "{child}" & wait'], tmp_path)
    wait_until(lambda: (tmp_path / "ready").exists(), timeout=10, message="the child to start")
    runner.terminate(running, grace=2)
    wait_until(lambda: (tmp_path / "clean").exists(), timeout=1, message="the child to finish cleanly within the grace")


# Config ---------------------------------------------------------------------------------

def test_a_bad_fallback_value_at_run_time_is_reported_under_its_own_key(use_plugins, monkeypatch):
    use_plugins("h_env")
    monkeypatch.setattr(settings, "CONFIG_FILE_VALUES", {"TIMEOUT": "soon"})
    snapshot = make_snapshot()
    snapshot.current_step = 1
    snapshot.save(update_fields=["current_step"])
    result = ArchiveResult.objects.create(crawl=snapshot.crawl, snapshot=snapshot, plugin="h_env", hook_name="on_Snapshot__10_env.py",
                                          step=1, status="queued", retry_at=timezone.now())
    after = tick_result(result)
    assert after.status == "failed"
    message = after.output_str or after.last_error
    assert re.search(r"(^|[^A-Z_])TIMEOUT: ", message), message


def test_an_invalid_enabled_flag_at_run_time_fails_only_that_plugin_without_a_traceback(tmp_path):
    coll = collection(tmp_path, "h_env,h_args", MAX_TICK_ERRORS="2", TICK_BACKOFF_BASE="0.1")
    url = "https://example.com/late-bad-enabled"
    coll.cli("add", "--bg", url)
    conf = coll.root / "ArchiveBox.conf"
    conf.write_text(conf.read_text() + "\n[PLUGINS]\nH_ENV_ENABLED = maybe\n")
    run_pools(coll, timeout=60)
    assert "Traceback" not in coll.log_text()
    got = results(coll)
    assert got[(url, "on_Snapshot__10_args.py")]["status"] == "succeeded"


def test_nan_is_not_a_valid_bounded_number():
    with pytest.raises(ConfigError, match="^H_ENV_RATIO: "):
        coerce("H_ENV_RATIO", {"type": "number", "minimum": 0, "maximum": 1}, "nan")


def test_a_union_type_in_config_json_is_supported_or_a_clear_error(tmp_path):
    plugins = tmp_path / "plugins"
    write(plugins / "h_union" / "config.json", '{"type": "object", "properties": {"H_UNION_NAME": {"type": ["string", "null"], "default": "x"}}}')
    write(plugins / "h_union" / "on_Snapshot__10_union.sh", "echo '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}'\n")
    coll = collection(tmp_path, "h_union", PLUGIN_DIRS=str(plugins))
    result = coll.cli("add", "https://example.com/union", check=False)
    assert "Traceback" not in result.stderr and "TypeError" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 0 or (result.returncode == 2 and "H_UNION_NAME" in result.stderr), result.stderr[-2000:]


# Discovery -------------------------------------------------------------------------------------

def test_same_hook_file_name_in_two_plugins_gives_two_results(tmp_path):
    plugins = tmp_path / "plugins"
    for name in ("h_dup_a", "h_dup_b"):
        write(plugins / name / "on_Snapshot__10_run.sh", f"echo '{{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"{name}\"}}'\n")
    coll = collection(tmp_path, "h_dup_a,h_dup_b", PLUGIN_DIRS=str(plugins))
    coll.cli("add", "https://example.com/dup")
    [snapshot] = coll.list_json()
    assert sorted((r["plugin"], r["output_str"]) for r in snapshot["results"]) == [("h_dup_a", "h_dup_a"), ("h_dup_b", "h_dup_b")]


def test_a_non_executable_file_with_an_unknown_extension_is_not_a_hook(tmp_path):
    folder = tmp_path / "h_notes"
    write(folder / "on_Snapshot__10_notes.md", "# what this plugin does\n")
    write(folder / "on_Snapshot__11_real.sh", "echo ok\n")
    tool = folder / "on_Snapshot__12_tool.bin"
    write(tool, "#!/bin/sh\necho ok\n")
    tool.chmod(0o755)
    hooks = [h.hook_name for h in find_hooks(find_plugins([tmp_path]), "Snapshot")]
    assert hooks == ["on_Snapshot__11_real.sh", "on_Snapshot__12_tool.bin"]


# Output records ----------------------------------------------------------------------------

def test_invalid_outlink_urls_do_not_become_snapshots(tmp_path):
    coll = collection(tmp_path, "h_links", H_LINKS_EXTRA=json.dumps(["https://", "http://example.com:99999/x", "https://?q=1"]))
    coll.cli("add", "--depth", "1", "https://example.com/links", check=False)
    urls = {s["url"] for s in coll.list_json()}
    assert not urls & {"https://", "http://example.com:99999/x", "https://?q=1"}, urls


def test_an_output_path_through_a_symlink_out_of_the_folder_is_refused(use_plugins):
    use_plugins("h_escape")
    snapshot = make_snapshot("https://example.com/escape/symlink")
    process = run_attempt(started_result(snapshot, "h_escape", "on_Snapshot__10_escape.py"))
    assert process.result_json["result"]["status"] == "failed"
    assert "refused output path" in process.result_json["result"]["output_str"]


def test_a_forked_hook_imports_nothing_the_fork_server_has_not_preloaded(tmp_path):
    """runpy.run_path imports pkgutil (3 ms, with typing) on every call: each forked hook paid
    for it until the fork server preloaded it. A trivial hook must find everything it and
    runpy need already imported."""
    from archivebox.process import forkclient, forkserver

    script = tmp_path / "on_Snapshot__10_probe.py"
    script.write_text("import json, sys\nopen('modules.json', 'w').write(json.dumps(sorted(sys.modules)))\n")
    client = forkclient.ForkClient()
    try:
        child = client.spawn([str(script)], str(tmp_path), {"PATH": os.environ.get("PATH", "")},
                             tmp_path / "out.log", tmp_path / "err.log")
        assert child.wait(30) == 0, (tmp_path / "err.log").read_text()
    finally:
        client.stop()
    in_child = set(json.loads((tmp_path / "modules.json").read_text()))
    probe = ("import json, sys; sys.argv = ['forkserver']; from archivebox.process import forkserver; "
             "forkserver.preload(); "
             "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(forkserver.__file__).resolve().parents[2]),
                               "FORKSERVER_PRELOAD": ",".join(forkclient.ENGINE_PRELOAD)})
    assert done.returncode == 0, done.stderr
    preloaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert sorted(in_child - preloaded) == []


@pytest.mark.parametrize("hook_name", ["on_Snapshot__10_args.py", "on_Snapshot__11_args.sh"])
def test_a_stale_launch_request_starts_nothing_and_leaves_nothing(use_plugins, hook_name):
    """A duplicate request (the attempt started already) writes no row, forks nothing, and
    leaves no folder and no log files."""
    use_plugins("h_args")
    snapshot = make_snapshot(f"https://example.com/stale-{hook_name}")
    result = started_result(snapshot, "h_args", hook_name, attempts=2)
    logs = settings.LOGS_DIR / "processes"
    before = set(logs.rglob("*.log"))
    run_hook.call_local(result.pk, 1)  # attempt 1 is over
    hook_effects.RUNS.join(10)
    assert set(logs.rglob("*.log")) == before
    assert not Process.objects.filter(archiveresult=result).exists()
    assert not (snapshot.output_dir / "h_args").exists()


def test_create_snapshots_returns_how_many_were_created_not_counting_duplicates():
    """It returned the number of URLs given, duplicates of the crawl's snapshots included."""
    from archivebox.sideeffects.crawl import create_snapshots

    crawl = make_snapshot("https://example.com/dup/0").crawl
    assert create_snapshots(crawl, ["https://example.com/dup/0", "https://example.com/dup/1", "https://example.com/dup/2"], depth=0) == 2
    assert create_snapshots(crawl, ["https://example.com/dup/1"], depth=0) == 0
