"""Show the state of the collection: its size, counts per state, the oldest due row, live workers,
the hosts that are busy, resting after a 429/503 or booked ahead (and why, until when).

The size is the index's and the archive folder's (a small collection's walked file by file,
a large one's estimated from a hundred snapshot folders taken at random; `--exact` walks it
all), with the snapshot folders present and those no snapshot names (orphaned), the
snapshots archived (one result succeeded) or not (on a large collection only with
`--exact`), and the users who can log in. Liveness comes from the database (orchestrator
lease, worker heartbeats), so this works for workers on any machine. Exit code 0 either
way; `--json` for scripts.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from archivebox.core import counting
from archivebox.core.graphs import ArchiveResultGraph, ProcessGraph
from archivebox.binaries import listing, system
from archivebox.broker import repair
from archivebox.cli.common import setup_django
from archivebox.cli.permissions import exposed
from archivebox.core import hostleases, robots
from archivebox.core.models import ArchiveResult, Crawl, Lease, Machine, Process, Snapshot
from archivebox.hooks.catalog import catalog, layers
from archivebox.web.health import POOLS, liveness

MODELS = [Crawl, Snapshot, ArchiveResult, Process]
# States of rows that still have work to do (their graphs' non-final states).
UNFINISHED = {model.__name__: set(model.graph.states) - set(model.graph.finals) for model in MODELS}
# The archive folder's size is counted file by file for a collection of at most WALK_BELOW
# snapshots (`--exact`: always), for at most SIZE_BUDGET seconds (`--exact`: no limit); a
# larger collection's (or one whose walk runs out of time) is estimated from SIZE_SAMPLE
# snapshot folders taken at random (on SQLite in SIZE_CLUSTERS runs of consecutive rows). Up
# to FEW_SNAPSHOTS snapshots the folders and the archived ones are counted one by one
# (`--exact`: always). Status answers within a second on any collection.
SIZE_BUDGET = 0.25
WALK_BELOW = 2_000
SIZE_SAMPLE = 100
SIZE_CLUSTERS = 10
FEW_SNAPSHOTS = 50_000


def tree_size(folder, budget: float | None = SIZE_BUDGET) -> tuple[int, bool]:
    """Bytes of the files under ``folder`` (links not followed), and whether all were counted
    within ``budget`` seconds (None: no limit)."""
    total, pending = 0, [str(folder)]
    deadline = None if budget is None else time.monotonic() + budget
    while pending:
        if deadline is not None and time.monotonic() > deadline:
            return total, False
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif not entry.is_symlink():
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total, True


def folders_of(archive_dir, known_ids: set[str]) -> dict:
    """Snapshot folders in ``archive/``: those of a snapshot (present), and the rest (orphaned;
    an upgraded snapshot's ``archive/<timestamp>`` link is neither)."""
    present = orphaned = 0
    if archive_dir.is_dir():
        for entry in os.scandir(archive_dir):
            if entry.is_symlink() or not entry.is_dir() or entry.name.startswith("."):
                continue
            try:
                is_snapshot = str(uuid.UUID(entry.name)) in known_ids
            except ValueError:
                is_snapshot = False
            present += is_snapshot
            orphaned += not is_snapshot
    return {"present": present, "orphaned": orphaned}


def archive_size(snapshots: int, exact: bool) -> dict:
    """The archive folder's bytes: counted (``archive_counted``), estimated from the folders of
    ``archive_sample`` snapshots taken at random, or (neither) at least so many."""
    at_least = 0  # bytes seen by a walk that ran out of time
    if exact or snapshots <= WALK_BELOW:
        at_least, complete = tree_size(settings.ARCHIVE_DIR, None if exact else SIZE_BUDGET)
        if complete:
            return {"archive_bytes": at_least, "archive_counted": True, "archive_sample": 0}
    sizes, deadline = [], time.monotonic() + SIZE_BUDGET
    sampled = counting.sample(Snapshot, "id", snapshots, SIZE_SAMPLE, SIZE_CLUSTERS)
    for pk in random.sample(sampled, min(len(sampled), SIZE_SAMPLE)):  # Postgres's blocks may hold more
        size, complete = tree_size(settings.ARCHIVE_DIR / str(uuid.UUID(str(pk))), deadline - time.monotonic())
        if not complete:
            at_least = max(at_least, size)
            break
        sizes.append(size)
    if not sizes:  # not one folder within the budget: the most a walk saw
        return {"archive_bytes": at_least, "archive_counted": False, "archive_sample": 0}
    return {"archive_bytes": round(sum(sizes) / len(sizes) * snapshots), "archive_counted": False, "archive_sample": len(sizes)}


def index_size() -> tuple[str, int]:
    """Where the index is (``index.sqlite3``, or the Postgres database's name) and its bytes."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_database(), pg_database_size(current_database())")
            name, size = cursor.fetchone()
        return f"Postgres database {name}", size
    index = settings.DATA_DIR / "index.sqlite3"
    return index.name, sum(p.stat().st_size for p in (index, index.with_name("index.sqlite3-wal")) if p.exists())


def size_report(snapshots: int, exact: bool) -> dict:
    """The index's and the archive's size; on a large collection (more than FEW_SNAPSHOTS
    snapshots) the folders and the archived snapshots are counted only with ``exact``."""
    index_where, index_bytes = index_size()
    users = get_user_model().objects.filter(is_active=True)
    report = {"index_bytes": index_bytes, "index_where": index_where, **archive_size(snapshots, exact), "snapshots": snapshots,
              "folders": None, "archived": None, "unarchived": None, "users": users.count(),
              "superusers": users.filter(is_superuser=True).count()}
    if exact or snapshots <= FEW_SNAPSHOTS:
        known = {str(pk) for pk in Snapshot.objects.values_list("pk", flat=True).iterator(chunk_size=2000)}
        archived = Snapshot.objects.filter(results__status=ArchiveResultGraph.succeeded).distinct().count()
        report.update(folders=folders_of(settings.ARCHIVE_DIR, known), snapshots=len(known), archived=archived,
                      unarchived=len(known) - archived)
    return report


def human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def register(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--exact", action="store_true", help="count every row of large tables (slow on millions) instead of estimating")


def gather(exact: bool = False) -> dict:
    now = timezone.now()
    report: dict = {"data_dir": str(settings.DATA_DIR), "models": {}, "estimated": [], "oldest_due": None}
    oldest = []
    for model in MODELS:
        counts, is_exact = counting.by_status(model, exact=exact)
        report["models"][model.__name__] = {status: counts.get(status, 0) for status in model.graph.states if counts.get(status)}
        if not is_exact:
            report["estimated"].append(model.__name__)
        due = model.objects.filter(retry_at__lte=now)
        if model is Process:
            due = due.exclude(kind=Process.Kind.WORKER, status=ProcessGraph.running)  # a live worker's retry_at is its heartbeat
        row = due.order_by("retry_at").values_list("pk", "retry_at", "status").first()
        if row:
            oldest.append((row[1], model.__name__, row[0], row[2]))
    if oldest:
        when, name, pk, status = min(oldest)
        report["oldest_due"] = {"model": name, "id": str(pk), "status": status, "overdue_seconds": round((now - when).total_seconds(), 3)}
    report["size"] = size_report(sum(report["models"].get("Snapshot", {}).values()), exact)
    report.update(liveness(now))
    # Every running worker row in one list too (what scripts of earlier versions read).
    report["workers"] = [{**w, "pool": pool, "alive": True} for pool, ws in report["pools"].items() for w in ws] + \
                        [{**w, "alive": False} for w in report["stale_workers"]]
    report["busy_slots"] = Lease.objects.filter(key__startswith="slot:", expires_at__gte=now).count()
    report["hosts"] = [{"host": h.name, "in_flight": h.in_flight, "strikes": h.strikes, "state": h.describe(now),
                        "paused_until": h.paused_until.isoformat() if h.paused_until and h.paused_until > now else None,
                        "reason": h.reason if h.paused_until and h.paused_until > now else ""}
                       for h in hostleases.report(now)]
    report["robots_skipped"] = robots.skipped()
    report["readable_by_others"] = exposed(settings.DATA_DIR)
    report["queue_files"] = queue_files(settings.QUEUE_DIR)
    report["binaries"] = listing.summary(Machine.current(settings.ENGINE.machine_id))
    cat = catalog(settings.DATA_DIR, settings.PLUGIN_DIRS, checked=False)  # runs nothing: checking config.json is add's
    config_layers = layers(file_values=settings.CONFIG_FILE_VALUES)
    report["binaries"]["system"] = [{"name": b.name, "path": b.path, "plugins": b.plugins, "problem": b.problem}
                                    for b in system.used(cat, config_layers, cat.enabled_plugins(config_layers))]
    report["waiting"] = sum(n for name, counts in report["models"].items() if name != "Process"
                            for status, n in counts.items() if status in UNFINISHED[name])
    return report


def queue_files(queue_dir) -> dict:
    """SQLite queue files that are corrupted now, and those moved aside after they were."""
    return {"corrupted": [f"{path}: {reason}" for path in sorted(queue_dir.glob("*.sqlite3")) if (reason := repair.check(path))],
            "moved_aside": [str(path) for path in repair.quarantined(queue_dir)]}


def _row(label: str, text: str) -> str:
    return f"{label + ':':18} {text}"


def format_report(report: dict) -> str:
    lines = [_row("Collection", report["data_dir"])]
    size = report["size"]
    about = "~" if "Snapshot" in report["estimated"] else ""
    archived = (f"archived: {size['archived']:,}, unarchived: {size['unarchived']:,}" if size["archived"] is not None
                else "archived ones counted by `--exact`")
    lines.append(_row("Index size", f"{human(size['index_bytes'])} ({size['index_where']}): {about}{size['snapshots']:,} snapshot(s), {archived}"))
    folders = (f"snapshot folders present: {size['folders']['present']:,}, orphaned: {size['folders']['orphaned']:,}"
               if size["folders"] is not None else "folders counted by `--exact`")
    if size["archive_sample"]:
        folders = f"estimated from {size['archive_sample']} snapshot folders, `--exact` counts every file; {folders}"
    about = "" if size["archive_counted"] else "~" if size["archive_sample"] else "at least "
    lines.append(_row("Archive size", f"{about}{human(size['archive_bytes'])} in {settings.ARCHIVE_DIR} ({folders})"))
    lines.append(_row("Users", f"{size['users']} user(s) can log in ({size['superusers']} superuser(s))"
                      if size["users"] else "none can log in yet: `archivebox manage createsuperuser`"))
    for name, counts in report["models"].items():
        # A large table's finished rows are estimated (see core.counting.by_status): "~12,800,000 succeeded".
        about = "~" if name in report["estimated"] else ""
        lines.append(_row(f"  {name}", ", ".join(f"{about if status not in UNFINISHED[name] else ''}{count:,} {status}"
                                                 for status, count in counts.items()) or "none"))
    if report["estimated"]:
        lines.append("  (~: estimated from a sample of a large table; `archivebox status --exact` counts every row)")
    due = report["oldest_due"]
    lines.append(_row("Oldest due row", f"{due['model']} {due['id']} ({due['status']}), due {due['overdue_seconds']}s ago"
                      if due else "none (nothing is waiting)"))
    orch = report["orchestrator"]
    lines.append(_row("Orchestrator", f"alive, held by {orch['holder']}, lease expires in {orch['expires_in']}s"
                      if orch["alive"] else "not running"))
    for pool in POOLS:
        workers = report["pools"].get(pool, [])
        lines.append(_row(f"Pool {pool}", f"{len(workers)} alive" if workers else "not running"))
        lines += [f"  - pid {w['pid']} on {w['machine']}: {w['label']}, heartbeat {w['heartbeat_age']}s ago" for w in workers]
    if report["stale_workers"]:
        lines.append(_row("Stale workers", f"{len(report['stale_workers'])} (heartbeat expired; the loop closes their rows)"))
    lines.append(_row("Busy slots", str(report["busy_slots"])))
    lines.append(_row("Hosts", f"{len(report['hosts'])} busy, resting or waited for" if report["hosts"] else "none busy"))
    if report["robots_skipped"]:
        lines.append(_row("  robots.txt", f"{report['robots_skipped']} outlink(s) skipped (ROBOTS_TXT): `archivebox list --status failed`"))
    lines += [f"  - {h['host']}: {h['state']}" for h in report["hosts"]]
    binaries = report["binaries"]
    provisioned = ", ".join(f"{count} {status}" for status, count in sorted(binaries["counts"].items()))
    lines.append(_row("Binaries", f"{provisioned} provisioned on this machine (`archivebox binary list`)" if provisioned
                      else "none provisioned (no enabled plugin needs one installed)"))
    lines += [f"  - {failed['name']} failed: {failed['reason']}" for failed in binaries["failed"]]
    lines += [f"  - {b['name']} from PATH: {b['path']} ({', '.join(b['plugins'])})" if b["path"] else
              f"  - {b['name']} missing: {b['problem']} ({', '.join(b['plugins'])})" for b in binaries["system"]]
    for problem in report["queue_files"]["corrupted"]:
        lines.append(f"Warning: queue file {problem}: the next worker moves it aside and starts an empty one")
    if report["queue_files"]["moved_aside"]:
        lines.append(_row("Queue files", f"{len(report['queue_files']['moved_aside'])} corrupted one(s) moved aside and "
                                         f"rebuilt, kept for a look: {', '.join(report['queue_files']['moved_aside'])}"))
    if report["readable_by_others"]:
        lines.append(f"Warning: other local users can read {', '.join(report['readable_by_others'])}: "
                     f"run `archivebox init` to make them private (chmod 700 the folder, 600 the files)")
    if not report["healthy"] and report["waiting"]:
        lines.append(f"{report['waiting']} row(s) wait for workers, and not all of orchestrator, ticks pool and side-effects pool "
                     "are alive: run `archivebox worker` or `archivebox server`, or `huey_consumer archivebox.pools.ticks` and "
                     "`huey_consumer archivebox.pools.sideeffects`.")
    elif not report["healthy"]:
        lines.append("Nothing waits for workers (`archivebox add` runs its own while it archives; `archivebox server` or "
                     "`archivebox worker` keep them running for scheduled crawls).")
    return "\n".join(lines)


def run(args) -> int:
    setup_django()
    report = gather(exact=args.exact)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
