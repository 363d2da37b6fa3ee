"""abx-plugins' own hooks, end to end: this engine against ArchiveBox 0.9.73 running them.

The workload of bench_archive.py (a generated local site, `archivebox add` in the
foreground until every snapshot is sealed), with the five abx-plugins counterparts of our
built-ins (wget, favicon, htmltotext, hashes, parse_html_urls) taken unmodified from
abx-plugins' ``plugins`` folder. Both engines run in the same process, one after the other,
on the same site; the figures are those of bench_archive.py (wall seconds, CPU seconds of the
whole process tree, peak resident memory summed over it), and the ratios.

    python bench/bench_abx.py --plugins-dir DIR --archivebox PATH [--pages 100] [--rounds 1]

DIR and PATH as for bench/abx_sweep.py. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from benchlib import Scratch, add_dir_option, run_measured  # noqa: E402 - bench/ is the script folder, first on sys.path
from localsite import generate_site, serve_site  # noqa: E402

VENV_BIN = Path(sys.executable).parent
PLUGINS = "wget,favicon,htmltotext,hashes,parse_html_urls"


def run_here(data: Path, urls: list[str], plugins_dir: Path, timeout: float) -> tuple:
    env = {**os.environ, "DATA_DIR": str(data), "PLUGIN_DIRS": str(plugins_dir)}
    archivebox = str(VENV_BIN / "archivebox")
    subprocess.run([archivebox, "init", "-q"], env=env, check=True, capture_output=True)
    listing = data / "urls.txt"
    listing.write_text("\n".join(urls) + "\n")
    run = run_measured([archivebox, "add", "--plugins", PLUGINS, "--file", str(listing)], env, timeout=timeout)
    listed = subprocess.run([archivebox, "list", "--jsonl"], env=env, capture_output=True, text=True, check=True)
    statuses = [r["status"] for line in listed.stdout.splitlines() if line.strip() for r in json.loads(line)["results"]]
    return run, statuses


def run_archivebox(data: Path, urls: list[str], archivebox: Path, timeout: float) -> tuple:
    if os.geteuid() == 0:
        shutil.chown(data, "archivebox", "archivebox")  # ArchiveBox drops root for the folder's owner
    env = {**os.environ, "PATH": f"{archivebox.parent}{os.pathsep}{os.environ['PATH']}", "SEARCH_BACKEND_ENGINE": "sqlite"}
    subprocess.run([str(archivebox), "init"], cwd=data, env=env, check=True, capture_output=True)
    run = run_measured([str(archivebox), "add", f"--plugins={PLUGINS}", *urls], env, cwd=data, timeout=timeout)
    with sqlite3.connect(data / "index.sqlite3") as db:
        statuses = [status for (status,) in db.execute("SELECT status FROM core_archiveresult")]
    return run, statuses


def summary(statuses: list[str]) -> dict[str, int]:
    return {status: statuses.count(status) for status in sorted(set(statuses))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugins-dir", type=Path, required=True, help="abx-plugins' plugins folder")
    parser.add_argument("--archivebox", type=Path, required=True, help="ArchiveBox 0.9.73's archivebox script")
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    add_dir_option(parser)
    args = parser.parse_args()
    figures: dict[str, list] = {"here": [], "archivebox": []}
    with Scratch(args.dir, prefix="abx-vs-") as scratch:
        os.chmod(scratch.root, 0o755)  # ArchiveBox runs as another user
        for _ in range(args.rounds):
            tmp = scratch.new("round")
            os.chmod(tmp, 0o755)
            site = tmp / "site"
            site.mkdir()
            with serve_site(site) as base_url:
                urls = [page.url for page in generate_site(site, pages=args.pages, base_url=base_url).pages][:args.pages]
                for engine in ("here", "archivebox"):
                    data = tmp / engine
                    data.mkdir()
                    if engine == "here":
                        run, statuses = run_here(data, urls, args.plugins_dir, args.timeout)
                    else:
                        run, statuses = run_archivebox(data, urls, args.archivebox, args.timeout)
                    figures[engine].append((run, statuses))
                    print(f"  {engine}: exit {run.returncode}, wall {run.wall:.1f} s, cpu {run.cpu:.1f} s, "
                          f"peak rss {run.peak_rss / 2**20:.0f} MB, results {summary(statuses)}")
    print(f"{args.pages} local pages, abx-plugins {PLUGINS} (median of {args.rounds}):")
    medians = {}
    for engine, runs in figures.items():
        medians[engine] = {key: statistics.median(getattr(run, key) for run, _ in runs) for key in ("wall", "cpu", "peak_rss")}
        m = medians[engine]
        print(f"  {engine:<10} wall {m['wall']:.1f} s, cpu {m['cpu']:.1f} s, peak rss {m['peak_rss'] / 2**20:.0f} MB")
    here, there = medians["here"], medians["archivebox"]
    print(f"  this engine: {there['wall'] / here['wall']:.1f}x faster wall, {there['cpu'] / here['cpu']:.1f}x less CPU, "
          f"{there['peak_rss'] / here['peak_rss']:.1f}x less memory than ArchiveBox 0.9.73")


if __name__ == "__main__":
    main()
