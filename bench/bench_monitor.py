"""Tick throughput with the task monitor off and on (and, optionally, django-huey-monitor's stock handler).

Each measurement runs in a fresh process on a fresh collection: N tasks are enqueued on
the real ``ticks`` Huey instance (SQLite queue with its doorbell), then an in-process
consumer of that instance (the same ArchiveboxConsumer ``huey_consumer`` runs, with its
worker registration and orchestrator) consumes them with ``--workers`` threads. The
clock runs from consumer start until the last task completes.

Workloads:
  noop  a task that does nothing: the worst case for the monitor's relative cost.
  tick  the real tick (``archivebox.tasks.ticks.tick``) of a row of a bench actor type:
        claim by compare-and-swap, read, decide ``Wait``, write: three statements on the
        app's SQLite DB, as a real tick that finds nothing to do.

Modes:
  off    TASK_MONITOR=false: no recorder.
  on     TASK_MONITOR=true: our recorder (buffer + background batch writer, own DB file).
  stock  (with --stock) django-huey-monitor's own ``store_signals`` handler connected to
         the ticks instance: synchronous writes per signal, for comparison.

Usage:  .venv/bin/python bench/bench_monitor.py [--tasks 10000] [--workers 2] [--rounds 3] [--stock]
Prints figures; it asserts nothing about them. Modes alternate within each round, and the
summary gives the median of per-round ratios too, because a busy machine moves single runs
by tens of percent; "us CPU/task" (process CPU during consumption) is the steadier figure.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def child(mode: str, workload: str, tasks: int, workers: int, flush_interval: float | None = None) -> dict:
    """One measurement, in this (fresh) process. DATA_DIR and TASK_MONITOR are set by the parent."""
    import datetime as dt  # noqa: PLC0415 (the parent process never sets up Django)

    from archivebox import boot  # noqa: PLC0415

    boot.setup()
    from django.core.management import call_command  # noqa: PLC0415
    from django.conf import settings  # noqa: PLC0415

    for alias in settings.DATABASES:
        call_command("migrate", database=alias, verbosity=0)
    from django.utils import timezone  # noqa: PLC0415
    from huey.signals import SIGNAL_COMPLETE  # noqa: PLC0415

    from archivebox.core.models import Crawl  # noqa: PLC0415
    from archivebox import pools  # noqa: PLC0415
    from archivebox.tasks import ticks  # noqa: PLC0415
    from archivebox.tasks.registry import ActorType, Wait, register  # noqa: PLC0415
    from archivebox.transitions.crawl import transition_crawl_give_up  # noqa: PLC0415
    from archivebox.web import monitor  # noqa: PLC0415

    huey = pools.ticks
    if flush_interval:
        monitor.RECORDER.flush_interval = flush_interval
    if mode == "stock":
        from huey_monitor.tasks import store_signals  # noqa: PLC0415

        huey.signal()(store_signals)

    completed = 0
    lock = threading.Lock()
    finished = threading.Event()

    def count_complete(signal, task, *args):
        nonlocal completed
        if task.name in ("bench.noop", "tick"):
            with lock:
                completed += 1
                if completed >= tasks:
                    finished.set()

    huey.signal(SIGNAL_COMPLETE)(count_complete)

    @huey.task(name="bench.noop")
    def noop(n):
        return None

    if workload == "noop":
        for n in range(tasks):
            noop(n)
    else:
        # Rows parked a day ahead: the orchestrator never finds them due; each tick claims its
        # row from the value it saw, reads it, decides Wait and writes, like a real idle tick.
        register(ActorType("BenchCrawl", Crawl, lambda obj, now, config: Wait(now + dt.timedelta(hours=1), "bench"),
                           transition_crawl_give_up, ("queued",)))
        parked = timezone.now() + dt.timedelta(days=1)
        rows = Crawl.objects.bulk_create([Crawl(urls=f"https://example.com/{n}", retry_at=parked) for n in range(tasks)])
        for row in rows:
            enqueue_tick(ticks.tick, "BenchCrawl", row.pk, parked)

    consumer = huey.create_consumer(workers=workers, periodic=True, check_worker_health=True)
    started, cpu_started = time.perf_counter(), time.process_time()
    consumer.start()
    if not finished.wait(timeout=600):
        raise SystemExit(f"only {completed} of {tasks} tasks completed in 600 s")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    consumer.stop(graceful=True)
    flush_started = time.perf_counter()
    monitor.RECORDER.close()
    lag = time.perf_counter() - flush_started
    from huey_monitor.models import SignalInfoModel  # noqa: PLC0415

    signals = SignalInfoModel.objects.count()
    if workload == "tick":
        moved = Crawl.objects.filter(retry_at__lt=parked).count()
        assert moved == tasks, f"{moved} of {tasks} ticks wrote their Wait"
    return {"mode": mode, "workload": workload, "tasks": tasks, "seconds": round(elapsed, 3),
            "per_second": round(tasks / elapsed, 1), "monitor_signals": signals, "final_flush_seconds": round(lag, 3),
            "dropped": monitor.RECORDER.dropped, "writer_cpu_seconds": round(monitor.RECORDER.writer_cpu, 3),
            "cpu_us_per_task": round(cpu / tasks * 1e6, 1)}


def enqueue_tick(task, actor_name: str, pk, seen) -> None:
    """Enqueue the engine's real ``tick`` task for one row, whichever of its signatures this checkout has

    (``(actor_name, pk, seen, slot)`` or the batched ``(actor_name, pks, token, slot, holder)``).
    """
    values = {"actor_name": actor_name, "pk": pk, "pks": [pk], "seen": seen, "token": seen, "slot": None, "holder": None}
    task(*(values[name] for name in inspect.signature(task.func).parameters))


def measure(mode: str, workload: str, tasks: int, workers: int, flush_interval: float | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="abx-bench-") as data_dir:
        env = {**os.environ, "DATA_DIR": data_dir, "TASK_MONITOR": "true" if mode == "on" else "false", "LOG_LEVEL": "ERROR",
               "PLUGINS": "noop"}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        out = subprocess.run([sys.executable, str(HERE), "--child", mode, "--workload", workload, "--tasks", str(tasks),
                              "--workers", str(workers), *(["--flush-interval", str(flush_interval)] if flush_interval else [])],
                             env=env, cwd=data_dir, capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            raise SystemExit(f"{mode}/{workload} run failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workload", choices=["noop", "tick", "both"], default="both")
    parser.add_argument("--stock", action="store_true", help="also measure django-huey-monitor's own synchronous handler")
    parser.add_argument("--flush-interval", type=float, help="the recorder's flush interval in seconds (default: its own)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.workload, args.tasks, args.workers, args.flush_interval)))
        return
    workloads = ["noop", "tick"] if args.workload == "both" else [args.workload]
    modes = ["off", "on"] + (["stock"] if args.stock else [])
    print(f"{args.tasks} tasks per run, {args.workers} worker threads, {args.rounds} round(s), median of rounds; "
          f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    for workload in workloads:
        runs: dict[str, list[dict]] = {mode: [] for mode in modes}
        for round_no in range(args.rounds):
            order = modes if round_no % 2 == 0 else list(reversed(modes))
            for mode in order:
                result = measure(mode, workload, args.tasks, args.workers, args.flush_interval)
                runs[mode].append(result)
                print(f"  {workload:5} {mode:5} round {round_no + 1}: {result['per_second']:8.1f} tasks/s "
                      f"in {result['seconds']:.2f} s, {result['cpu_us_per_task']:6.1f} us CPU/task "
                      f"({result['monitor_signals']} monitor signals, writer CPU {result['writer_cpu_seconds']:.2f} s, "
                      f"final flush {result['final_flush_seconds']} s)", flush=True)
        summarize(workload, runs)


def summarize(workload: str, runs: dict[str, list[dict]]) -> None:
    """Medians per mode, and the median of per-round ratios (each round's runs are adjacent in time)."""
    speed = {mode: statistics.median(r["per_second"] for r in results) for mode, results in runs.items()}
    cpu = {mode: statistics.median(r["cpu_us_per_task"] for r in results) for mode, results in runs.items()}
    for mode in [m for m in runs if m != "off"]:
        pairs = [on["per_second"] / off["per_second"] for on, off in zip(runs[mode], runs["off"])]
        print(f"{workload}: monitor off {speed['off']:.1f} tasks/s ({cpu['off']:.0f} us CPU/task), "
              f"{mode} {speed[mode]:.1f} tasks/s ({cpu[mode]:.0f} us CPU/task); throughput ratio {mode}/off: "
              f"median of medians {speed[mode] / speed['off']:.2f}, median of rounds {statistics.median(pairs):.2f} "
              f"(rounds {', '.join(f'{r:.2f}' for r in pairs)}); CPU ratio off/{mode} {cpu['off'] / cpu[mode]:.2f}")


if __name__ == "__main__":
    main()
