"""abx-plugins' own hooks, end to end: this engine against ArchiveBox 0.9.73 running them.

The workload of bench_archive.py (a generated local site, `archivebox add` in the
foreground until every snapshot is sealed), with the five abx-plugins counterparts of our
built-ins (wget, favicon, htmltotext, hashes, parse_html_urls) taken unmodified from
abx-plugins' ``plugins`` folder. Each round runs, on the same site one after the other:
this engine (its Python hooks forks of a fork server in their interpreter), with
``--fresh`` this engine again with a new interpreter for every hook run (FORKSERVER=false,
the way it ran them before the fork server), then ArchiveBox; before the first round, each
engine archives one page unmeasured (its first run provisions the binaries its hooks need,
once per machine). The figures:

  wall        seconds from `archivebox add` start to its exit (every snapshot sealed)
  cpu         user + system CPU seconds of archivebox and every process it started
  peak pss    the largest proportional set size summed over the process tree (every 200 ms)
  peak rss    the same with resident memory (every 20 ms; counts shared pages once per process)
  results     each (URL, plugin)'s status and message against ArchiveBox's on the same site
              (hashes' message is a digest of files that differ run to run: status only)

With ``--per-hook N`` it then replays, for each plugin, N of this engine's hook runs (their
command, environment and a copy of their snapshot folder, from the Process rows) twice: in
a new interpreter each, and as forks of one fork server in that interpreter (as the engine
runs them now), and prints each plugin's CPU seconds per run (p50) both ways.

    python bench/bench_abx.py --plugins-dir DIR --archivebox PATH [--pages 100] [--rounds 1] [--fresh] [--per-hook 10]

DIR and PATH as for bench/abx_sweep.py. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from benchlib import Scratch, add_dir_option, percentile, run_measured  # noqa: E402 - bench/ is the script folder, first on sys.path
from localsite import generate_site, serve_site  # noqa: E402

from archivebox.process import forkserver  # noqa: E402 - the standard library only: no Django needed

VENV_BIN = Path(sys.executable).parent
PLUGINS = "wget,favicon,htmltotext,hashes,parse_html_urls"
# Messages that carry a digest of files whose bytes differ from run to run (the WARC).
STATUS_ONLY = {"hashes"}


def run_here(data: Path, urls: list[str], plugins_dir: Path, timeout: float, **env_extra: str) -> tuple:
    env = {**os.environ, "DATA_DIR": str(data), "PLUGIN_DIRS": str(plugins_dir), **env_extra}
    archivebox = str(VENV_BIN / "archivebox")
    subprocess.run([archivebox, "init", "-q"], env=env, check=True, capture_output=True)
    listing = data / "urls.txt"
    listing.write_text("\n".join(urls) + "\n")
    run = run_measured([archivebox, "add", "--plugins", PLUGINS, "--file", str(listing)], env, timeout=timeout)
    listed = subprocess.run([archivebox, "list", "--jsonl"], env=env, capture_output=True, text=True, check=True)
    results = {(snap["url"], r["plugin"]): (r["status"], r["output_str"] or "")
               for snap in map(json.loads, filter(str.strip, listed.stdout.splitlines())) for r in snap["results"]}
    return run, results


def run_archivebox(data: Path, urls: list[str], archivebox: Path, timeout: float) -> tuple:
    if os.geteuid() == 0:
        shutil.chown(data, "archivebox", "archivebox")  # ArchiveBox drops root for the folder's owner
    env = {**os.environ, "PATH": f"{archivebox.parent}{os.pathsep}{os.environ['PATH']}", "SEARCH_BACKEND_ENGINE": "sqlite"}
    subprocess.run([str(archivebox), "init"], cwd=data, env=env, check=True, capture_output=True)
    run = run_measured([str(archivebox), "add", f"--plugins={PLUGINS}", *urls], env, cwd=data, timeout=timeout)
    with sqlite3.connect(data / "index.sqlite3") as db:
        rows = db.execute("SELECT s.url, r.plugin, r.status, r.output_str FROM core_archiveresult r "
                          "JOIN core_snapshot s ON s.id = r.snapshot_id").fetchall()
    return run, {(url, plugin): (status, output or "") for url, plugin, status, output in rows}


def summary(results: dict) -> dict[str, int]:
    statuses = [status for status, _ in results.values()]
    return {status: statuses.count(status) for status in sorted(set(statuses))}


def same_as(ours: dict, theirs: dict) -> tuple[int, list[str]]:
    """How many of ArchiveBox's results this engine ended the same way, and the others."""
    same, different = 0, []
    for key, (status, output) in sorted(theirs.items()):
        got = ours.get(key)
        if got is not None and got[0] == status and (key[1] in STATUS_ONLY or got[1] == output):
            same += 1
        else:
            different.append(f"{key[1]} {key[0]}: {got} (ArchiveBox: {(status, output)})")
    return same, different


# Per-hook CPU: replaying the engine's hook runs ------------------------------------------------

def hook_runs(data: Path, per_plugin: int) -> list[dict]:
    """``per_plugin`` of each plugin's Python hook runs that exited 0: command, folder, environment."""
    with sqlite3.connect(data / "index.sqlite3") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT label, cmd, pwd, env FROM core_process WHERE kind='hook' AND exit_code=0 "
                          "AND cmd LIKE '%.py%' ORDER BY created_at").fetchall()
    chosen: dict[str, list[dict]] = {}
    for row in rows:
        plugin = row["label"].split("/")[0]
        if len(chosen.setdefault(plugin, [])) < per_plugin:
            chosen[plugin].append({"plugin": plugin, "cmd": json.loads(row["cmd"]), "pwd": Path(row["pwd"]),
                                   "env": json.loads(row["env"])})
    return [run for runs in chosen.values() for run in runs]


def in_a_copy(run: dict, into: Path) -> tuple[list[str], str, dict]:
    """The run's command, folder and environment, on a copy of its snapshot folder."""
    snap = Path(run["env"]["SNAP_DIR"])
    copy = into / f"{snap.name}-{time.monotonic_ns()}"
    shutil.copytree(snap, copy)
    env = {key: value for key, value in run["env"].items() if value != "***"}  # values the row keeps hidden: unset
    env["SNAP_DIR"] = str(copy)
    return run["cmd"], str(copy / run["pwd"].name), env


def cpu_of_fresh(cmd: list[str], cwd: str, env: dict) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   start_new_session=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class Server:
    """A fork server in a hook's interpreter, started as the engine starts one (``-P``,
    :data:`forkserver.AS_SCRIPT`, abx-plugins' shared modules preloaded). The CPU of a hook it
    forked is what the server's reaped children used meanwhile (``cutime + cstime``)."""

    def __init__(self, interpreter: str, env: dict):
        self.address = f"\0abx-bench-{os.getpid()}-{time.monotonic_ns()}".encode()
        startup = {key: value for key, value in env.items() if key.startswith("PYTHON") or key in ("LANG", "PATH", "HOME")}
        self.proc = subprocess.Popen([interpreter, "-P", forkserver.__file__, self.address.hex(), str(os.getpid()),
                                      forkserver.AS_SCRIPT], env={**startup, "FORKSERVER_PRELOAD": ",".join(forkserver.THIRD_PARTY_PRELOAD)},
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.proc.stdout.readline()  # "ready"

    def children_cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime

    def cpu_of_fork(self, cmd: list[str], cwd: str, env: dict, logs: Path) -> float:
        before = self.children_cpu()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(self.address)
            sock.sendall(json.dumps({"argv": cmd[1:], "cwd": cwd, "env": env, "stdout": str(logs / "out.log"),
                                     "stderr": str(logs / "err.log")}).encode() + b"\n")
            replies = b""
            while replies.count(b"\n") < 2:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                replies += chunk
        return self.children_cpu() - before

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def per_hook_cpu(data: Path, per_plugin: int, scratch: Path) -> dict[str, tuple[float, float]]:
    """Each plugin's CPU seconds per hook run (p50): in a new interpreter, and forked."""
    runs = hook_runs(data, per_plugin)
    fresh: dict[str, list[float]] = {}
    forked: dict[str, list[float]] = {}
    servers: dict[tuple, Server] = {}
    try:
        for run in runs:
            cmd, cwd, env = in_a_copy(run, scratch)
            fresh.setdefault(run["plugin"], []).append(cpu_of_fresh(cmd, cwd, env))
            cmd, cwd, env = in_a_copy(run, scratch)
            key = (cmd[0], env.get("PYTHONPATH", ""))
            if key not in servers:
                servers[key] = Server(cmd[0], env)
            forked.setdefault(run["plugin"], []).append(servers[key].cpu_of_fork(cmd, cwd, env, scratch))
    finally:
        for server in servers.values():
            server.stop()
    return {plugin: (percentile(fresh[plugin], 50), percentile(forked[plugin], 50)) for plugin in fresh}


def run_engine(engine: str, data: Path, urls: list[str], args) -> tuple:
    if engine == "archivebox":
        return run_archivebox(data, urls, args.archivebox, args.timeout)
    return run_here(data, urls, args.plugins_dir, args.timeout, **({"FORKSERVER": "false"} if engine == "fresh" else {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugins-dir", type=Path, required=True, help="abx-plugins' plugins folder")
    parser.add_argument("--archivebox", type=Path, required=True, help="ArchiveBox 0.9.73's archivebox script")
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--fresh", action="store_true", help="also run this engine with a new interpreter per hook run")
    parser.add_argument("--per-hook", type=int, default=0, help="replay this many runs of each hook, fresh and forked")
    add_dir_option(parser)
    args = parser.parse_args()
    engines = ["here", *(["fresh"] if args.fresh else []), "archivebox"]
    figures: dict[str, list] = {engine: [] for engine in engines}
    per_hook: dict[str, tuple[float, float]] = {}
    load = os.getloadavg()
    with Scratch(args.dir, prefix="abx-vs-") as scratch:
        os.chmod(scratch.root, 0o755)  # ArchiveBox runs as another user
        for _ in range(args.rounds):
            tmp = scratch.new("round")
            os.chmod(tmp, 0o755)
            site = tmp / "site"
            site.mkdir()
            with serve_site(site) as base_url:
                urls = [page.url for page in generate_site(site, pages=args.pages, base_url=base_url).pages][:args.pages]
                if not figures["here"]:  # each engine's first run provisions its binaries: not measured
                    for engine in ("here", "archivebox"):
                        (tmp / f"warmup-{engine}").mkdir()
                        run_engine(engine, tmp / f"warmup-{engine}", urls[:1], args)
                outcomes = {}
                for engine in engines:
                    data = tmp / engine
                    data.mkdir()
                    run, results = run_engine(engine, data, urls, args)
                    outcomes[engine] = results
                    figures[engine].append(run)
                    print(f"  {engine}: exit {run.returncode}, wall {run.wall:.1f} s, cpu {run.cpu:.1f} s "
                          f"(the archivebox process itself {run.own_cpu:.1f} s), "
                          f"peak pss {run.peak_pss / 2**20:.0f} MB, peak rss {run.peak_rss / 2**20:.0f} MB, results {summary(results)}",
                          flush=True)
                for engine in engines[:-1]:
                    same, different = same_as(outcomes[engine], outcomes["archivebox"])
                    print(f"  {engine}: {same} of ArchiveBox's {len(outcomes['archivebox'])} results ended the same way", flush=True)
                    for line in different[:10]:
                        print(f"    {line}")
                if args.per_hook and not per_hook:
                    replays = tmp / "replays"
                    replays.mkdir()
                    per_hook = per_hook_cpu(tmp / "here", args.per_hook, replays)
    print(f"{args.pages} local pages, abx-plugins {PLUGINS} (median of {args.rounds}; load average before: "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores):")
    medians = {}
    for engine, runs in figures.items():
        medians[engine] = {key: statistics.median(getattr(run, key) for run in runs) for key in ("wall", "cpu", "peak_pss", "peak_rss")}
        m = medians[engine]
        print(f"  {engine:<10} wall {m['wall']:.1f} s, cpu {m['cpu']:.1f} s, peak pss {m['peak_pss'] / 2**20:.0f} MB, "
              f"peak rss {m['peak_rss'] / 2**20:.0f} MB")
    there = medians["archivebox"]
    for engine in engines[:-1]:
        here = medians[engine]
        print(f"  {engine}: {there['wall'] / here['wall']:.1f}x faster wall, {there['cpu'] / here['cpu']:.1f}x less CPU, "
              f"{there['peak_pss'] / here['peak_pss']:.2f}x less memory (pss) than ArchiveBox 0.9.73")
    for plugin, (fresh, forked) in sorted(per_hook.items()):
        print(f"  per hook run, {plugin:<16} CPU p50 {fresh * 1000:.0f} ms in a new interpreter, {forked * 1000:.0f} ms forked")


if __name__ == "__main__":
    main()
