"""Hook runner benchmarks: engine overhead per hook run, and 50 background hooks at once.

  overhead    archive N URLs with one trivial hook each (sh, then Python through the fork
              server) and measure, per hook run, the wall time of the whole engine path
              (the result became due -> the result is final) minus the hook's own run
              time (its process started -> it exited); prints p50 and p99.
  background  one snapshot with 50 background hooks that would run for 10 minutes and
              one quick foreground hook: the snapshot seals when the foreground hook is
              done, and every background hook must be tracked, terminated and recorded.

Each measurement uses a fresh collection and runs `archivebox add` as a user would.
Usage:  .venv/bin/python bench/bench_hooks.py [overhead|background|all] [--urls 200] [--dir PATH]
Prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import psutil

from benchlib import Scratch, add_dir_option, percentile  # noqa: E402 - bench/ is the script folder, first on sys.path

VENV_BIN = Path(sys.executable).parent

SH_HOOK = '#!/bin/sh\necho \'{"type":"ArchiveResult","status":"succeeded","output_str":"ok"}\'\n'
PY_HOOK = 'import json\nprint(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "ok"}))\n'
BG_HOOK = "#!/bin/sh\nsleep 600\n"


def parse_time(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def make_plugins(root: Path, hooks: dict[str, str]) -> Path:
    for relative, body in hooks.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return root


def collection(tmp: Path, plugins_dir: Path, plugins: str, **env) -> dict:
    data = tmp / "data"
    data.mkdir()
    full = {**os.environ, "DATA_DIR": str(data), "PLUGIN_DIRS": str(plugins_dir), "PLUGINS": plugins, **env}
    subprocess.run([str(VENV_BIN / "archivebox"), "init", "-q"], env=full, check=True)
    return full


def overhead(scratch: Scratch, urls: int, ext: str, active: int) -> dict:
    """One step-0 hook per snapshot (due as soon as its snapshot starts); ``active``
    snapshots at once: 1 measures the path alone, more measures it under load."""
    tmp = scratch.new(f"overhead-{ext}-{active}")
    name = f"on_Snapshot__00_quick.{ext}"
    plugins = make_plugins(tmp / "plugins", {f"quick/{name}": SH_HOOK if ext == "sh" else PY_HOOK})
    env = collection(tmp, plugins, "quick", SNAPSHOT_MAX_ACTIVE=str(active))
    listing = tmp / "urls.txt"
    listing.write_text("\n".join(f"https://example.com/{i}" for i in range(urls)))
    subprocess.run([str(VENV_BIN / "archivebox"), "add", "--file", str(listing)], env=env, check=True, capture_output=True)
    db = sqlite3.connect(Path(env["DATA_DIR"]) / "index.sqlite3")
    rows = db.execute(
        "SELECT r.created_at, r.finished_at, p.started_at, p.ended_at FROM core_archiveresult r "
        "JOIN core_process p ON p.archiveresult_id = r.id WHERE r.status = 'succeeded'").fetchall()
    costs, runs = [], []
    for created, finished, started, ended in rows:
        run = parse_time(ended) - parse_time(started)
        runs.append(run)
        costs.append(parse_time(finished) - parse_time(created) - run)
    return {"n": len(costs), "p50_ms": percentile(costs, 50) * 1000, "p99_ms": percentile(costs, 99) * 1000,
            "hook_p50_ms": statistics.median(runs) * 1000}


def background(scratch: Scratch, count: int) -> dict:
    tmp = scratch.new("background")
    hooks = {f"bg{i:02d}/on_Snapshot__10_bg{i:02d}.bg.sh": BG_HOOK for i in range(count)}
    hooks["quick/on_Snapshot__20_quick.sh"] = SH_HOOK
    plugins = make_plugins(tmp / "plugins", hooks)
    env = collection(tmp, plugins, ",".join([*(f"bg{i:02d}" for i in range(count)), "quick"]),
                     HOOK_KILL_GRACE="2", TIMEOUT="900")
    started = time.perf_counter()
    done = subprocess.run([str(VENV_BIN / "archivebox"), "add", "https://example.com/bg"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    db = sqlite3.connect(Path(env["DATA_DIR"]) / "index.sqlite3")
    processes = db.execute("SELECT pid, status, reason FROM core_process WHERE kind = 'hook' AND label LIKE 'bg%'").fetchall()
    results = db.execute("SELECT status, COUNT(*) FROM core_archiveresult WHERE plugin LIKE 'bg%' GROUP BY status").fetchall()
    alive = [pid for pid, _, _ in processes if pid and psutil.pid_exists(pid)
             and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    return {"exit": done.returncode, "seconds": seconds, "tracked": len(processes),
            "exited": sum(status == "exited" for _, status, _ in processes),
            "terminated_at_seal": sum("was sealed" in (reason or "") for _, _, reason in processes),
            "results": dict(results), "still_running": len(alive)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", nargs="?", default="all", choices=["overhead", "background", "all"])
    parser.add_argument("--urls", type=int, default=200)
    parser.add_argument("--background", type=int, default=50)
    add_dir_option(parser)
    args = parser.parse_args()
    with Scratch(args.dir) as scratch:
        run(scratch, args)


def run(scratch: Scratch, args) -> None:
    if args.what in ("overhead", "all"):
        for ext in ("sh", "py"):
            for active, label in ((1, "one snapshot at a time"), (16, "16 snapshots at once")):
                r = overhead(scratch, args.urls, ext, active)
                print(f"engine overhead per hook run ({ext} hook, {label}, {r['n']} runs): p50 {r['p50_ms']:.1f} ms, "
                      f"p99 {r['p99_ms']:.1f} ms (the hook itself: p50 {r['hook_p50_ms']:.1f} ms)", flush=True)
    if args.what in ("background", "all"):
        r = background(scratch, args.background)
        print(flush=True)
        print(f"{args.background} background hooks on one snapshot: add exited {r['exit']} after {r['seconds']:.1f} s; "
              f"{r['tracked']} tracked, {r['exited']} exited ({r['terminated_at_seal']} terminated at seal), "
              f"results {r['results']}, still running afterwards: {r['still_running']}")


if __name__ == "__main__":
    main()
