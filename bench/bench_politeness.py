"""Politeness at scale: 10,000 URLs over 200 loopback hosts, with and without per-host limits.

One crawl of ``--urls`` pages spread over ``--hosts`` hosts (127.0.0.1, 127.0.0.2, ...: each
a server of its own, logging every request) is archived by one ``archivebox worker`` with
the ``headers`` hook (one request per page; each page answered after ``--page-delay``
seconds, a slow site). Twice, in fresh collections:

  limits     PER_HOST_SNAPSHOTS=1 (the issue's setting);
  no limits  PER_HOST_SNAPSHOTS=100000 (nothing held back but SNAPSHOT_MAX_ACTIVE).

Printed for each: wall time and pages per second (and the ratio), the most requests any
host had in flight at once (seen by its server), and the largest gap any host saw between
the end of one of its requests and the start of its next one (how long a host waited for
its turn). Then, in-process: one orchestrator pass and one pacing pass (letting snapshots
in) with the same crawl's snapshots queued over the same hosts, p50/p99.

Usage:  .venv/bin/python bench/bench_politeness.py [--urls 10000] [--hosts 200] [--page-delay 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import percentile  # noqa: E402 - bench/ is the script folder, first on sys.path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent / "tests"))
VENV_BIN = Path(sys.executable).parent


def archive(urls: list[str], env: dict, timeout: float) -> float:
    """Seconds for one worker to archive the crawl of ``urls`` in a fresh collection."""
    with tempfile.TemporaryDirectory(prefix="abx-polite-") as data_dir:
        env = {**os.environ, "DATA_DIR": data_dir, "PLUGINS": "headers", "LOG_LEVEL": "WARNING", **env}
        subprocess.run([str(VENV_BIN / "archivebox"), "init", "-q"], env=env, check=True, cwd=data_dir)
        listing = Path(data_dir) / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        subprocess.run([str(VENV_BIN / "archivebox"), "add", "--bg", "--file", str(listing)], env=env, check=True, cwd=data_dir,
                       stdout=subprocess.DEVNULL)
        started = time.perf_counter()
        worker = subprocess.Popen([str(VENV_BIN / "archivebox"), "worker"], env=env, cwd=data_dir, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=open(Path(data_dir) / "worker.log", "wb"))
        db = sqlite3.connect(Path(data_dir) / "index.sqlite3", timeout=60)
        try:
            while time.perf_counter() - started < timeout:
                if db.execute("SELECT COUNT(*) FROM core_crawl WHERE status = 'sealed'").fetchone()[0] == 1:
                    break
                time.sleep(0.5)
            else:
                raise SystemExit(f"not archived within {timeout} s:\n{(Path(data_dir) / 'worker.log').read_text()[-3000:]}")
            seconds = time.perf_counter() - started
            failed = db.execute("SELECT COUNT(*) FROM core_archiveresult WHERE status != 'succeeded'").fetchone()[0]
        finally:
            os.killpg(worker.pid, signal.SIGINT)
            worker.wait(timeout=60)
        if failed:
            print(f"  warning: {failed} hook results did not succeed", file=sys.stderr)
        return seconds


def host_figures(site, hosts: list[str]) -> dict:
    """Most requests of one host in flight at once, and the largest idle gap a host saw."""
    most, gaps = 0, []
    for host in hosts:
        asked = site.of(host)
        events = sorted([(r.start, 1) for r in asked] + [(r.end, -1) for r in asked])
        level = 0
        for _, step in events:
            level += step
            most = max(most, level)
        gaps += [b.start - a.end for a, b in zip(asked, asked[1:])]
    return {"most_at_once": most, "largest_gap_s": round(max(gaps), 2) if gaps else 0.0,
            "median_gap_s": round(statistics.median(gaps), 3) if gaps else 0.0}


def child_passes(urls: int, hosts: int) -> dict:
    """One orchestrator pass and one pacing pass with ``urls`` snapshots queued over ``hosts`` hosts."""
    os.environ.setdefault("ORCHESTRATOR_IDLE_POLL", "1.0")
    from archivebox import boot  # noqa: PLC0415 - the parent process never sets up Django

    boot.setup()
    from django.conf import settings  # noqa: PLC0415
    from django.core.management import call_command  # noqa: PLC0415
    from django.utils import timezone  # noqa: PLC0415

    for alias in settings.DATABASES:
        call_command("migrate", database=alias, verbosity=0)
    from archivebox import pools  # noqa: PLC0415,F401 - the actor types and side effects, as the consumers load them
    from archivebox.core.models import SNAPSHOTS_STEP, Crawl, Lease, Snapshot  # noqa: PLC0415
    from archivebox.sideeffects import pacing  # noqa: PLC0415
    from archivebox.tasks.orchestrator import Orchestrator  # noqa: PLC0415
    from archivebox.tasks.queue import huey  # noqa: PLC0415
    from archivebox.tasks.registry import ACTOR_TYPES  # noqa: PLC0415

    now = timezone.now()
    later = now + timezone.timedelta(hours=1)
    crawl = Crawl.objects.create(urls="http://127.0.0.1/", status="started", current_step=SNAPSHOTS_STEP, retry_at=later,
                                 config={"PER_HOST_SNAPSHOTS": "1"})
    Snapshot.objects.bulk_create([Snapshot(crawl=crawl, url=f"http://127.0.0.{1 + n % hosts}/page/{n}", retry_at=later)
                                  for n in range(urls)], batch_size=2000)
    orchestrator = Orchestrator(settings.ENGINE, list(ACTOR_TYPES.values()))

    def timed(call, rounds: int, reset) -> list[float]:
        times = []
        for _ in range(rounds):
            reset()
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return times

    def free_all() -> None:
        Lease.objects.filter(actor__startswith="host:").update(holder="", expires_at=None)
        Snapshot.objects.filter(status="queued").update(retry_at=later, claimed=False)
        huey.storage.flush_queue()

    activations = timed(lambda: pacing.activate(crawl.pk, 16), 30, free_all)
    pacing.activate(crawl.pk, 16)  # 16 in flight: the next passes find the room taken
    full = timed(lambda: pacing.activate(crawl.pk, 16), 30, lambda: None)
    Lease.objects.filter(key__startswith="slot:").update(holder="", expires_at=None)
    passes = timed(orchestrator.run_single_cycle, 50, lambda: Lease.objects.filter(key__startswith="slot:").update(holder="", expires_at=None))
    ms = lambda values: {"p50_ms": round(percentile(values, 50) * 1000, 2), "p99_ms": round(percentile(values, 99) * 1000, 2)}  # noqa: E731
    return {"activate_16_from_empty": ms(activations), "activate_when_full": ms(full), "orchestrator_pass": ms(passes)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=10_000)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--page-delay", type=float, default=0.05)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "passes":
        print(json.dumps(child_passes(args.urls, args.hosts)))
        return
    from politesite import PoliteSite  # noqa: PLC0415 - tests/ holds the loopback site

    site = PoliteSite(hosts=args.hosts, delay=args.page_delay)
    try:
        figures = {}
        for name, env in (("limits", {"PER_HOST_SNAPSHOTS": "1"}), ("no limits", {"PER_HOST_SNAPSHOTS": "100000"})):
            site.requests.clear()
            tag = name.replace(" ", "-")
            urls = [site.url(site.hosts[n % args.hosts], f"/page/{tag}-{n}") for n in range(args.urls)]
            seconds = archive(urls, env, args.timeout)
            figures[name] = {"seconds": round(seconds, 1), "pages_per_s": round(args.urls / seconds, 1), **host_figures(site, site.hosts)}
            print(f"{name:9}: {args.urls} pages over {args.hosts} hosts in {seconds:.1f} s ({args.urls / seconds:.1f}/s); "
                  f"most requests of one host at once {figures[name]['most_at_once']}; largest gap a host saw between its "
                  f"requests {figures[name]['largest_gap_s']} s (median {figures[name]['median_gap_s']} s)", flush=True)
        print(f"throughput with PER_HOST_SNAPSHOTS=1 / without limits: {figures['limits']['pages_per_s'] / figures['no limits']['pages_per_s']:.2f}")
    finally:
        site.close()
    with tempfile.TemporaryDirectory(prefix="abx-polite-") as data_dir:
        done = subprocess.run([sys.executable, str(HERE), "--child", "passes", "--urls", str(args.urls), "--hosts", str(args.hosts)],
                              capture_output=True, text=True, env={**os.environ, "DATA_DIR": data_dir, "LOG_LEVEL": "WARNING"})
        if done.returncode != 0:
            raise SystemExit(f"passes failed:\n{done.stderr[-3000:]}")
        print(f"in-process, {args.urls} snapshots queued over {args.hosts} hosts: {done.stdout.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
