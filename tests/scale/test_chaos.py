"""Chaos: SIGKILL either worker pool at random moments; every hook outcome must survive.

More than 100 pages of a local site on 127.0.0.1 are archived by real ``huey_consumer``
processes (a ticks pool and a side-effects pool) with the ``chaosledger`` test plugin
(tests/scale/plugins/chaosledger/: two foreground Python hooks, a foreground shell hook,
a finite background Python hook, each sleeping 0.05-1.5 s derived from its URL, and a
background service that runs until its snapshot's cleanup stops it). Every hook run
appends ``start`` and ``end`` lines to a ledger. Meanwhile one pool or the other is
SIGKILLed with its whole process group (seeded RNG: ``CHAOS_SEED``, printed) and started
again at once, as a supervisor would. When every row is final:

* every Crawl, Snapshot, ArchiveResult and Process row is final, every result succeeded
  (a hook fails only when it is killed, so a failure means the kill reached the outcome);
* no two runs of one (snapshot, hook) overlapped (two ``start``\\s without an ``end`` in
  between, or overlapping intervals);
* no hook ran again after a run of it had printed its succeeded record and exited 0;
* no hook process lived on that no running Process row tracked, and none is left at the end.

The same chaos runs on the embedded default (SQLite app DB, SqliteHuey) and on Postgres +
Redis. ``test_graceful_stop_lets_a_running_foreground_hook_finish``: one SIGTERM to the
side-effects pool lets a running foreground hook finish and be recorded as succeeded.

Run: ``.venv/bin/python -m pytest tests/scale/test_chaos.py -s`` (``CHAOS_SEED=N`` to replay a run).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest

from helpers import VENV_BIN, Collection, wait_until
from localsite import local_site
from scaletools import FAST_RECOVERY, SCALE_PLUGINS, ScaleCollection

# The two Huey instances the stock ``huey_consumer`` runs (its first argument), by pool.
HUEY_APPS = {"ticks": "archivebox.pools.ticks", "sideeffects": "archivebox.pools.sideeffects"}

PLUGIN = "chaosledger"
PLUGIN_DIR = SCALE_PLUGINS / PLUGIN
PLUGIN_DIRS = os.pathsep.join([str(SCALE_PLUGINS.parent.parent / "fixtures" / "plugins"), str(SCALE_PLUGINS)])
HOOKS = sorted(p.name for p in PLUGIN_DIR.glob("on_Snapshot__*"))
URLS = 110
KILLS = 10
MIN_KILLS_MID_RUN = 8
WORKERS = {"ticks": 2, "sideeffects": 4}
# A live hook process no running Process row names, for this long, is untracked (the row
# is written before the spawn and gets its PID right after: that window is not a leak).
UNTRACKED_GRACE = 5.0
# HOOK_KILL_GRACE: the hooks exit at once on SIGTERM (writing an ``end ... sigterm`` line);
# a long grace keeps a slow moment of this 2-core machine from turning that into a SIGKILL.
ENV = {**FAST_RECOVERY, "TIMEOUT": "10", "HOOK_CONCURRENCY": "16", "HOOK_KILL_GRACE": "3", "PLUGIN_DIRS": PLUGIN_DIRS}


def start_pool(collection: Collection, pool: str) -> subprocess.Popen:
    """The stock ``huey_consumer <HUEY_APPS[pool]> -w N`` in its own session, as
    :meth:`helpers.Collection.start_consumer` starts it (and registered with the collection
    the same way, so it is stopped after the test whatever happens), but naming the Huey
    instance by the full path in ``HUEY_APPS``."""
    log = collection.root / f"{pool}-{len(collection.logs)}.log"
    collection.logs.append(log)
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(VENV_BIN / "huey_consumer"), HUEY_APPS[pool], "-w", str(WORKERS[pool])],
                                cwd=collection.root, env=collection.env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    collection.consumers.append(proc)
    return proc


def hex_id(value) -> str:
    return uuid.UUID(str(value)).hex


# The ledger ----------------------------------------------------------------------------

@dataclass
class Run:
    pid: int
    start: float
    end: float | None = None
    how: str | None = None  # "succeeded" (printed its record, exits 0) or "sigterm"
    concurrent: bool = False  # it found an earlier run of its hook for its snapshot still alive (its lock)


def read_ledger(path: Path) -> tuple[dict[tuple[str, str], list[Run]], list[str]]:
    """``{(snapshot id hex, hook file): [runs, by start time]}`` and lines that make no sense."""
    runs: dict[tuple[str, str], list[Run]] = defaultdict(list)
    open_runs: dict[tuple[str, str, int], Run] = {}
    odd = []
    if not path.exists():
        return {}, []
    for line in path.read_text().splitlines():
        parts = line.split()
        try:
            kind, snap, hook, pid, ts = parts[0], hex_id(parts[1]), parts[2], int(parts[3]), float(parts[4])
        except (IndexError, ValueError):
            odd.append(f"unreadable ledger line {line!r}")
            continue
        if kind == "start":
            run = Run(pid, ts, concurrent=parts[5:6] == ["concurrent"])
            runs[(snap, hook)].append(run)
            open_runs[(snap, hook, pid)] = run
        elif kind == "end" and (snap, hook, pid) in open_runs:
            run = open_runs.pop((snap, hook, pid))
            run.end, run.how = ts, parts[5] if len(parts) > 5 else "?"
        else:
            odd.append(f"ledger line without its start: {line!r}")
    for key in runs:
        runs[key].sort(key=lambda r: r.start)
    return dict(runs), odd


def ledger_findings(runs: dict[tuple[str, str], list[Run]]) -> dict[str, list[str]]:
    """What the ledger says. ``overlaps``: a run started after an earlier one that never wrote
    ``end``, or before the earlier one's ``end``. ``concurrent_runs``: those of them proven to
    run at the same time (the earlier run still held its lock); the rest started after a run
    that died without an end line (SIGKILLed: its outcome was lost)."""
    overlaps, concurrent, after_success, sigterms, unended = [], [], [], [], []
    for (snap, hook), seq in sorted(runs.items()):
        name = f"{hook} of snapshot {snap}"
        for a, b in zip(seq, seq[1:]):
            both = " (proven concurrent: the earlier run held its lock)" if b.concurrent else ""
            if a.end is None:
                overlaps.append(f"{name}: pid {b.pid} started at {b.start:.3f} after pid {a.pid} (started {a.start:.3f}) "
                                f"which never wrote end{both}")
            elif b.start < a.end:
                overlaps.append(f"{name}: pid {b.pid} started at {b.start:.3f} while pid {a.pid} ran until {a.end:.3f}{both}")
            elif b.concurrent:
                overlaps.append(f"{name}: pid {b.pid} started at {b.start:.3f} while a child of pid {a.pid} held its lock")
            if b.concurrent:
                concurrent.append(overlaps[-1])
        for a in seq:
            later = next((b for b in seq if a.how == "succeeded" and b.start >= a.end), None)
            if later is not None:
                after_success.append(f"{name}: pid {a.pid} succeeded at {a.end:.3f}, yet pid {later.pid} ran it again at {later.start:.3f}")
            if a.how == "sigterm":
                sigterms.append(f"{name}: pid {a.pid} stopped by SIGTERM at {a.end:.3f} after {a.end - a.start:.2f}s")
            if a.end is None:
                unended.append(f"{name}: pid {a.pid} started at {a.start:.3f} and never wrote end (SIGKILLed, or alive)")
    return {"overlaps": overlaps, "concurrent_runs": concurrent, "reruns_after_success": after_success,
            "sigterm_stops": sigterms, "unended_runs": unended}


# Hook processes --------------------------------------------------------------------------

class HookWatch:
    """Finds live hook processes of this collection and checks that running Process rows track them.

    A hook process is one whose command line names the plugin folder (shell hooks), or
    whose working directory is a ``chaosledger`` folder of this data dir (forked Python
    hooks, which keep the fork server's command line, and every child of a hook).
    """

    def __init__(self, collection: Collection):
        self.collection = collection
        self.root = str(collection.root) + os.sep
        self.suspects: dict[tuple[int, float], float] = {}
        self.untracked: dict[tuple[int, float], str] = {}
        self.samples = 0
        self.most_seen = 0  # the most hook processes one sample found (0 would mean a blind watch)

    def processes(self) -> dict[int, psutil.Process]:
        found = {}
        for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
            info = proc.info
            if info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline, cwd = " ".join(info["cmdline"] or []), info["cwd"] or ""
            if str(PLUGIN_DIR) in cmdline or (cwd.startswith(self.root) and f"{os.sep}{PLUGIN}" in cwd[len(self.root) - 1:]):
                found[proc.pid] = proc
        return found

    def top_level(self, procs: dict[int, psutil.Process]) -> dict[int, psutil.Process]:
        """Hook processes whose parent is not a hook process (their children go with them)."""
        tops = {}
        for pid, proc in procs.items():
            try:
                if proc.ppid() not in procs:
                    tops[pid] = proc
            except psutil.NoSuchProcess:
                continue
        return tops

    def describe(self, proc: psutil.Process) -> str:
        try:
            return f"pid {proc.pid} ({' '.join(proc.cmdline())[-120:]}, cwd {proc.cwd()}, age {time.time() - proc.create_time():.1f}s)"
        except psutil.Error:
            return f"pid {proc.pid} (gone)"

    def sample(self) -> None:
        procs = self.processes()
        tops = self.top_level(procs)
        try:
            tracked = {row["pid"] for row in self.collection.query(
                "SELECT pid FROM core_process WHERE kind = 'hook' AND status = 'running' AND pid IS NOT NULL")}
        except Exception:  # noqa: BLE001 - the database is busy or away: no sample this time
            return
        self.samples += 1
        self.most_seen = max(self.most_seen, len(tops))
        now, seen = time.monotonic(), set()
        for pid, proc in tops.items():
            if pid in tracked:
                continue
            try:
                key = (pid, proc.create_time())
                if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
                    continue
            except psutil.Error:
                continue
            seen.add(key)
            first = self.suspects.setdefault(key, now)
            if now - first >= UNTRACKED_GRACE and key not in self.untracked:
                self.untracked[key] = f"{self.describe(proc)}: alive {now - first:.1f}s with no running Process row"
        self.suspects = {key: first for key, first in self.suspects.items() if key in seen}

    def pause(self, seconds: float) -> None:
        """Let ``seconds`` pass, sampling all along."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sample()
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def leftovers(self, timeout: float = 5.0) -> list[str]:
        """Hook processes still alive ``timeout`` seconds after every row was final."""
        deadline = time.monotonic() + timeout
        while (procs := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return [self.describe(proc) for proc in procs.values()]


# The collections ---------------------------------------------------------------------------

def unfinished(collection: Collection) -> int:
    try:
        return collection.unfinished()
    except Exception:  # noqa: BLE001 - SQLite busy, Postgres away: not finished
        return -1


def make_collection(request, tmp_path: Path, backend: str, extra_env: dict | None = None) -> Collection:
    env = {**ENV, **(extra_env or {})}
    if backend == "sqlite":
        return Collection(tmp_path / "data", plugins=PLUGIN, extra_env=env).init()
    database_url, redis_url = request.getfixturevalue("database_url"), request.getfixturevalue("redis_url")
    return ScaleCollection(tmp_path / "data", database_url, redis_url, plugins=PLUGIN, extra_env=env).init()


def final_state_problems(collection: Collection, urls: int) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = {}
    counts = {table: collection.counts(table) for table in ("crawl", "snapshot", "archiveresult")}
    expected = {"crawl": {"sealed": 1}, "snapshot": {"sealed": urls}, "archiveresult": {"succeeded": urls * len(HOOKS)}}
    problems["rows_not_as_expected"] = [f"{table}: {counts[table]} (expected {want})" for table, want in expected.items()
                                        if counts[table] != want]
    live = [row for row in collection.query(
        "SELECT kind, status, label, pid FROM core_process WHERE retry_at IS NOT NULL OR status <> 'exited'")
        if not (row["kind"] in ("worker", "forkserver") and row["status"] == "running")]
    problems["rows_not_final"] = [f"process {row['kind']} {row['label']} pid {row['pid']}: {row['status']}" for row in live]
    for table in ("crawl", "snapshot", "archiveresult"):
        problems["rows_not_final"] += [f"{table} {row['id']}: {row['status']}" for row in
                                       collection.query(f"SELECT id, status FROM core_{table} WHERE retry_at IS NOT NULL")]
    problems["failed_results"] = [f"{row['plugin']}/{row['hook_name']} of snapshot {hex_id(row['snapshot_id'])}: "
                                  f"{row['status']} after {row['attempts']} attempts: {row['output_str'][:160]}"
                                  for row in collection.query("SELECT snapshot_id, plugin, hook_name, status, attempts, output_str "
                                                              "FROM core_archiveresult WHERE status <> 'succeeded'")]
    return problems


def results_without_a_succeeded_run(collection: Collection, runs: dict[tuple[str, str], list[Run]]) -> list[str]:
    """Results recorded succeeded although no run of their hook printed a record and exited."""
    rows = collection.query("SELECT snapshot_id, hook_name FROM core_archiveresult WHERE status = 'succeeded'")
    return [f"{row['hook_name']} of snapshot {hex_id(row['snapshot_id'])}" for row in rows
            if not any(run.how == "succeeded" for run in runs.get((hex_id(row["snapshot_id"]), row["hook_name"]), []))]


def hook_row_reasons(collection: Collection) -> str:
    """How the hook Process rows ended, e.g. ``exit 0: 440, killed: its worker was gone: 12``."""
    rows = collection.query("SELECT reason, exit_code, COUNT(*) AS n FROM core_process WHERE kind = 'hook' "
                            "GROUP BY reason, exit_code ORDER BY n DESC")
    return ", ".join(f"{row['reason'] or 'exit'} ({row['exit_code']}): {row['n']}" for row in rows)


def summary(name: str, seed: int, kills: list[str], findings: dict[str, list[str]], runs, elapsed: float, reasons: str) -> str:
    reruns = sum(len(seq) - 1 for seq in runs.values())
    lines = [f"chaos[{name}] seed={seed} kills={len(kills)} hook runs={sum(map(len, runs.values()))} "
             f"re-runs={reruns} elapsed={elapsed:.1f}s",
             "  kills: " + ", ".join(kills),
             "  hook Process rows ended: " + reasons]
    lines += [f"  {check}: {len(items)}" for check, items in findings.items()]
    for check, items in findings.items():
        for item in items[:8]:
            lines.append(f"    {check}: {item}")
        if len(items) > 8:
            lines.append(f"    {check}: ... and {len(items) - 8} more")
    return "\n".join(lines)


# What must be empty for the run to pass (the rest of the findings only explain them).
MUST_BE_EMPTY = ("rows_not_as_expected", "rows_not_final", "failed_results", "overlaps", "concurrent_runs", "reruns_after_success",
                 "untracked_hook_processes", "hook_processes_left", "results_without_a_succeeded_run", "ledger_oddities",
                 "pools_died", "engine_processes_left")


def engine_processes_left(collection: Collection, timeout: float = 5.0) -> list[str]:
    """Processes of the engine (pools, fork servers) still working in the collection
    ``timeout`` seconds after every pool was stopped (a fork server checks its worker once a
    second); hooks are the watch's business."""
    root = str(collection.root)

    def alive() -> list[str]:
        found = []
        for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
            cmdline = " ".join(proc.info["cmdline"] or [])
            if proc.info["status"] != psutil.STATUS_ZOMBIE and proc.info["cwd"] == root and "archivebox" in cmdline:
                found.append(f"pid {proc.pid}: {cmdline[:120]}")
        return found

    try:
        wait_until(lambda: not alive(), timeout=timeout, interval=0.2, message="the engine's processes to end")
    except AssertionError:
        return alive()
    return []


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_random_sigkills_of_either_pool_lose_no_hook_outcome(request, tmp_path, backend):
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(2**32))
    print(f"\nchaos[{backend}] seed={seed} (CHAOS_SEED={seed} replays its kill schedule: the same delays and victims)", file=sys.stderr, flush=True)
    rng = random.Random(seed)
    began = time.monotonic()

    with local_site(tmp_path / "site", pages=URLS) as site:
        urls = [page.url for page in site.info.pages]
        collection = make_collection(request, tmp_path, backend)
        collection.cli("add", "--bg", input="\n".join(urls))
        watch = HookWatch(collection)
        pools = {pool: start_pool(collection, pool) for pool in HUEY_APPS}
        kills: list[str] = []
        mid_run = 0
        try:
            for _ in range(KILLS):
                watch.pause(rng.uniform(0.3, 2.5))
                victim = rng.choice(["ticks", "sideeffects", "sideeffects"])
                left = unfinished(collection)
                proc = pools[victim]
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                pools[victim] = start_pool(collection, victim)
                kills.append(f"{victim}@{time.monotonic() - began:.1f}s")
                mid_run += left != 0
            deadline = time.monotonic() + 200
            while (left := unfinished(collection)) != 0 and time.monotonic() < deadline:
                watch.pause(0.25)
            watch.sample()
            settled = left == 0
            left_alive = watch.leftovers() if settled else []
            died = [f"{name} pool pid {proc.pid} exited {proc.returncode} by itself (see its log in {collection.root})"
                    for name, proc in pools.items() if proc.poll() is not None]
        finally:
            collection.stop_all(signal.SIGINT)
        engine_left = engine_processes_left(collection)
        requested = set(site.server.requested_paths())

    elapsed = time.monotonic() - began
    runs, odd = read_ledger(collection.root / "chaos-ledger.log")
    findings = final_state_problems(collection, len(urls))
    findings.update(ledger_findings(runs))
    findings["untracked_hook_processes"] = list(watch.untracked.values())
    findings["hook_processes_left"] = left_alive
    findings["results_without_a_succeeded_run"] = results_without_a_succeeded_run(collection, runs)
    findings["ledger_oddities"] = odd
    findings["pools_died"] = died
    findings["engine_processes_left"] = engine_left
    report = summary(backend, seed, kills, findings, runs, elapsed, hook_row_reasons(collection))
    report += f"\n  process watch: {watch.samples} samples, at most {watch.most_seen} hook processes at once"
    print(report, file=sys.stderr, flush=True)

    assert settled, f"rows still unfinished after the deadline:\n{report}"
    assert mid_run >= MIN_KILLS_MID_RUN, f"only {mid_run} kills hit unfinished work: nothing much was tested\n{report}"
    assert watch.samples > 10 and watch.most_seen > 0, f"the hook process watch saw nothing\n{report}"
    failing = [check for check in MUST_BE_EMPTY if findings[check]]
    assert not failing, f"checks failed: {', '.join(failing)}\n{report}"
    # Every page was fetched by its step-2 hook from the local site (only 127.0.0.1 is ever contacted).
    assert {urlsplit(url).path for url in urls} <= requested


# Graceful stop -----------------------------------------------------------------------------

@pytest.mark.slow
def test_graceful_stop_lets_a_running_foreground_hook_finish(tmp_path):
    """One SIGTERM to the side-effects pool: the foreground hooks it runs (1 s each) finish,
    print their record and are recorded succeeded on their first attempt, not stopped and run again."""
    with local_site(tmp_path / "site", pages=3) as site:
        url = site.info.pages[0].url
        collection = Collection(tmp_path / "data", plugins=PLUGIN, extra_env={**ENV, "CHAOSLEDGER_SECONDS": "1.0"}).init()
        collection.cli("add", "--bg", url)
        ledger = collection.root / "chaos-ledger.log"
        start_pool(collection, "ticks")
        effects = start_pool(collection, "sideeffects")
        foreground = [hook for hook in HOOKS if ".bg." not in hook and hook.startswith("on_Snapshot__1")]
        try:
            def running_foreground() -> bool:
                runs, _ = read_ledger(ledger)
                started = {hook for (_, hook), seq in runs.items() if seq and seq[-1].end is None}
                rows = collection.query("SELECT pid FROM core_process WHERE kind = 'hook' AND status = 'running' AND pid IS NOT NULL")
                return set(foreground) <= started and len(rows) >= len(foreground)

            wait_until(running_foreground, timeout=60, interval=0.02, message="the step-1 foreground hooks to run")
            os.killpg(effects.pid, signal.SIGTERM)
            stopped_at = time.monotonic()
            exit_code = effects.wait(timeout=60)
            stop_seconds = time.monotonic() - stopped_at
            start_pool(collection, "sideeffects")
            wait_until(lambda: unfinished(collection) == 0, timeout=90, interval=0.1, message="every row final after the restart")
        finally:
            collection.stop_all(signal.SIGINT)

    runs, odd = read_ledger(ledger)
    results = {row["hook_name"]: row for row in collection.query(
        "SELECT hook_name, status, attempts, output_str FROM core_archiveresult")}
    report = (f"pool exited {exit_code} {stop_seconds:.1f}s after SIGTERM\n"
              + "\n".join(f"  {hook}: runs {[(r.pid, r.how) for r in seq]}" for (_, hook), seq in sorted(runs.items()))
              + "\n" + "\n".join(f"  result {name}: {row['status']} after {row['attempts']} attempt(s): {row['output_str'][:100]}"
                                 for name, row in sorted(results.items())))
    print(report, file=sys.stderr)
    assert not odd, odd
    for hook in foreground:
        [seq] = [seq for (_, name), seq in runs.items() if name == hook]
        assert [run.how for run in seq] == ["succeeded"], f"{hook} was not left to finish:\n{report}"
        assert (results[hook]["status"], results[hook]["attempts"]) == ("succeeded", 1), f"{hook}:\n{report}"
    assert all(row["status"] == "succeeded" for row in results.values()), report


# The ledger checks themselves --------------------------------------------------------------

def test_ledger_findings_name_each_kind_of_problem(tmp_path):
    """The checks above catch what they claim to, on a ledger written by hand."""
    a, b, c, d, e = (uuid.uuid4() for _ in range(5))
    (tmp_path / "ledger").write_text("\n".join([
        f"start {a} h.py 10 1.0", f"end {a} h.py 10 2.0 succeeded",                       # fine
        f"start {b} h.py 11 1.0", f"start {b} h.py 12 1.5 concurrent",                    # two at once
        f"end {b} h.py 12 2.0 succeeded", f"end {b} h.py 11 2.5 succeeded",
        f"start {c} h.py 13 1.0", f"end {c} h.py 13 2.0 succeeded", f"start {c} h.py 14 3.0",  # re-run after success
        f"end {c} h.py 14 4.0 succeeded",
        f"start {d} h.py 15 1.0", f"start {d} h.py 16 3.0", f"end {d} h.py 16 4.0 succeeded",  # after an unended run
        f"start {e} h.py 17 1.0", f"end {e} h.py 17 1.5 sigterm", f"start {e} h.py 18 2.0",    # stopped, run again: fine
        f"end {e} h.py 18 3.0 succeeded", f"end {e} h.py 99 3.0 succeeded",
    ]) + "\n")
    runs, odd = read_ledger(tmp_path / "ledger")
    found = ledger_findings(runs)
    assert sorted(item.split(":")[0] for item in found["overlaps"]) == sorted([f"h.py of snapshot {b.hex}", f"h.py of snapshot {d.hex}"])
    assert [item.split(":")[0] for item in found["concurrent_runs"]] == [f"h.py of snapshot {b.hex}"]
    assert [item.split(":")[0] for item in found["reruns_after_success"]] == [f"h.py of snapshot {c.hex}"]
    assert [item.split(":")[0] for item in found["sigterm_stops"]] == [f"h.py of snapshot {e.hex}"]
    assert [item.split(":")[0] for item in found["unended_runs"]] == [f"h.py of snapshot {d.hex}"]
    assert len(odd) == 1 and "pid" not in odd[0] and "99" in odd[0]
