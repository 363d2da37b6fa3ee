"""Archive a generated local site end to end: wall time, CPU seconds, peak memory.

The workload the issue compares against: 100 local pages, five plugins (wget, favicon,
htmltotext, hashes, parse_html_urls), `archivebox add` in the foreground (both worker
pools in the one process), on a loopback HTTP server that this script starts. The
figures:

  wall        seconds from `archivebox add` start to its exit (every snapshot sealed)
  cpu         user + system CPU seconds of archivebox and every process it started
  peak rss    the largest total resident memory of archivebox's process tree at any
              moment, sampled every 20 ms (the HTTP server is not counted)

Usage:  .venv/bin/python bench/bench_archive.py [--pages 100] [--rounds 3] [--plugins ...] [--dir PATH]
                                                 [--archivebox PATH]
With ``--archivebox`` (ArchiveBox 0.9.73's ``archivebox`` script, as for bench_abx.py), each
round runs ArchiveBox on the same site right after this engine, and the ratios are of the
medians measured here and now. Without it, the ratios are against a reference measured on
another day (this VM's speed drifts by 10-30 %): ArchiveBox 0.9.73, same five plugins,
100 local URLs (2026-11-27, median of 2): 110.7 s wall, about 1.9 CPU-seconds per URL,
about 540 MB resident.
Prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from benchlib import Scratch, add_dir_option, run_measured  # noqa: E402 - bench/ is the script folder, first on sys.path
from bench_abx import run_archivebox, summary  # noqa: E402
from localsite import generate_site, serve_site  # noqa: E402

VENV_BIN = Path(sys.executable).parent
PLUGINS = "wget,favicon,htmltotext,hashes,parse_html_urls"
REFERENCE = {"wall": 110.7, "cpu_per_url": 1.93, "rss_mb": 540}


def one_round(scratch: Scratch, pages: int, plugins: str, env_extra: dict, archivebox: Path | None = None) -> dict:
    tmp = scratch.new("round")
    os.chmod(tmp, 0o755)  # ArchiveBox runs as the folder's owner, another user
    site_root, data_dir = tmp / "site", tmp / "data"
    site_root.mkdir()
    data_dir.mkdir()
    with serve_site(site_root) as base_url:
        info = generate_site(site_root, pages=pages, base_url=base_url)
        urls = [page.url for page in info.pages][:pages]
        listing = data_dir / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        env = {**os.environ, "DATA_DIR": str(data_dir), "PLUGINS": plugins, **env_extra}
        subprocess.run([str(VENV_BIN / "archivebox"), "init", "-q"], env=env, check=True)
        run = run_measured([str(VENV_BIN / "archivebox"), "add", "--file", str(listing)], env)
        if run.returncode != 0:
            raise SystemExit(f"archivebox add failed ({run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}")
        listed = subprocess.run([str(VENV_BIN / "archivebox"), "list", "--jsonl"], env=env, capture_output=True, text=True, check=True)
        snapshots = [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]
        results = [r for s in snapshots for r in s["results"]]
        figures = {
            "wall": run.wall, "cpu": run.cpu, "engine_cpu": run.own_cpu, "rss_mb": run.peak_rss / 2**20, "snapshots": len(snapshots),
            "sealed": sum(s["status"] == "sealed" for s in snapshots),
            "results": {status: sum(r["status"] == status for r in results) for status in {r["status"] for r in results}},
        }
        if archivebox:
            (tmp / "archivebox").mkdir()
            theirs, their_results = run_archivebox(tmp / "archivebox", urls, archivebox, timeout=1800)
            figures["archivebox"] = {"wall": theirs.wall, "cpu": theirs.cpu, "rss_mb": theirs.peak_rss / 2**20,
                                     "results": summary(their_results)}
        return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--plugins", default=PLUGINS)
    parser.add_argument("--archivebox", type=Path, help="ArchiveBox 0.9.73's archivebox script: run it on the same site each round")
    add_dir_option(parser)
    args = parser.parse_args()
    with Scratch(args.dir, prefix="abx-archive-") as scratch:
        os.chmod(scratch.root, 0o755)
        rounds = [one_round(scratch, args.pages, args.plugins, {}, args.archivebox) for _ in range(args.rounds)]
    wall = statistics.median(r["wall"] for r in rounds)
    cpu = statistics.median(r["cpu"] for r in rounds)
    rss = statistics.median(r["rss_mb"] for r in rounds)
    print(f"archive {args.pages} local pages with {args.plugins} (median of {args.rounds}):")
    print(f"  wall {wall:.1f} s ({wall / args.pages * 1000:.0f} ms per URL), CPU {cpu:.1f} s ({cpu / args.pages:.3f} s per URL), "
          f"peak RSS {rss:.0f} MB")
    if args.archivebox:
        theirs = {key: statistics.median(r["archivebox"][key] for r in rounds) for key in ("wall", "cpu", "rss_mb")}
        print(f"  ArchiveBox 0.9.73 on the same sites: wall {theirs['wall']:.1f} s, CPU {theirs['cpu']:.1f} s, "
              f"peak RSS {theirs['rss_mb']:.0f} MB: this engine {theirs['wall'] / wall:.1f}x faster wall, "
              f"{theirs['cpu'] / cpu:.1f}x less CPU, {theirs['rss_mb'] / rss:.1f}x less memory")
    elif args.pages == 100 and args.plugins == PLUGINS:
        print(f"  vs ArchiveBox 0.9.73 reference: {REFERENCE['wall'] / wall:.1f}x faster wall, "
              f"{REFERENCE['cpu_per_url'] * args.pages / cpu:.1f}x less CPU, {REFERENCE['rss_mb'] / rss:.1f}x less memory")
    for r in rounds:
        print(f"  round: wall {r['wall']:.1f} s, cpu {r['cpu']:.1f} s (archivebox process itself {r['engine_cpu']:.1f} s), rss {r['rss_mb']:.0f} MB, "
              f"{r['sealed']}/{r['snapshots']} sealed, results {r['results']}")
        if "archivebox" in r:
            a = r["archivebox"]
            print(f"    ArchiveBox 0.9.73: wall {a['wall']:.1f} s, cpu {a['cpu']:.1f} s, rss {a['rss_mb']:.0f} MB, results {a['results']}")


if __name__ == "__main__":
    main()
