"""Show the state of the collection: counts per state, the oldest due row, live workers."""

from __future__ import annotations

import json

from django.conf import settings
from django.utils import timezone

from archivebox.cli.common import setup_django
from archivebox.cli.progress import by_status
from archivebox.core.models import ArchiveResult, Crawl, Lease, Process, Snapshot
from archivebox.tasks import leases

MODELS = [Crawl, Snapshot, ArchiveResult, Process]


def register(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def gather() -> dict:
    now = timezone.now()
    report: dict = {"data_dir": str(settings.DATA_DIR), "models": {}, "oldest_due": None}
    oldest = []
    for model in MODELS:
        report["models"][model.__name__] = by_status(model.objects.all())
        row = model.objects.filter(retry_at__lte=now).order_by("retry_at").values_list("pk", "retry_at", "status").first()
        if row:
            oldest.append((row[1], model.__name__, row[0], row[2]))
    if oldest:
        when, name, pk, status = min(oldest)
        report["oldest_due"] = {"model": name, "id": str(pk), "status": status, "overdue_seconds": round((now - when).total_seconds(), 3)}
    holder = leases.holder_of(leases.ORCHESTRATOR, now)
    report["orchestrator"] = {
        "alive": holder is not None,
        "holder": holder.holder if holder else None,
        "expires_in": round((holder.expires_at - now).total_seconds(), 1) if holder else None,
    }
    workers = Process.objects.filter(kind=Process.Kind.WORKER, status="running").select_related("machine")
    report["workers"] = [
        {"label": w.label, "pid": w.pid, "machine": str(w.machine), "alive": w.retry_at is not None and w.retry_at > now,
         "heartbeat_age": round((now - w.modified_at).total_seconds(), 1)}
        for w in workers
    ]
    report["busy_slots"] = Lease.objects.filter(key__startswith="slot:", expires_at__gte=now).count()
    return report


def run(args) -> int:
    setup_django()
    report = gather()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"Collection: {report['data_dir']}")
    for name, counts in report["models"].items():
        detail = ", ".join(f"{status} {count}" for status, count in sorted(counts.items())) or "none"
        print(f"  {name + ':':15} {detail}")
    due = report["oldest_due"]
    print(f"Oldest due row: {due['model']} {due['id']} ({due['status']}), due {due['overdue_seconds']}s ago" if due else "Oldest due row: none (nothing is waiting)")
    orch = report["orchestrator"]
    print(f"Orchestrator:   {'alive, held by ' + orch['holder'] + ', lease expires in ' + str(orch['expires_in']) + 's' if orch['alive'] else 'not running'}")
    alive = [w for w in report["workers"] if w["alive"]]
    print(f"Worker pools:   {len(alive)} alive" + "".join(f"\n  - {w['label']} pid {w['pid']} on {w['machine']} (heartbeat {w['heartbeat_age']}s ago)" for w in alive))
    if not alive:
        print("  (run `archivebox worker`, or `huey_consumer archivebox.tasks.huey` and `huey_consumer archivebox.sideeffects.huey`)")
    return 0
