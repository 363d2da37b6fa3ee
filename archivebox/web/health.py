"""Liveness of the engine, read from the database: the orchestrator lease and worker heartbeats.

A worker pool is alive when its Process row (kind ``worker``) is running and its
``retry_at`` (pushed forward by every heartbeat) is still in the future; the
orchestrator is alive while someone holds its unexpired lease. Used by ``/health/`` and
``archivebox status``.
"""

from __future__ import annotations

import datetime as dt

from archivebox.core.graphs import ProcessGraph
from archivebox.core.models import Process
from archivebox.core import leases

POOLS = ("ticks", "sideeffects")


def liveness(now: dt.datetime) -> dict:
    holder = leases.holder_of(leases.ORCHESTRATOR, now)
    orchestrator = {
        "alive": holder is not None,
        "holder": holder.holder if holder else None,
        "expires_in": round((holder.expires_at - now).total_seconds(), 1) if holder else None,
    }
    pools: dict[str, list[dict]] = {pool: [] for pool in POOLS}
    stale: list[dict] = []
    workers = Process.objects.filter(kind=Process.Kind.WORKER, status=ProcessGraph.running).select_related("machine").order_by("created_at")
    for worker in workers:
        entry = {
            "pid": worker.pid,
            "label": worker.label,
            "machine": str(worker.machine),
            "heartbeat_age": round((now - worker.modified_at).total_seconds(), 1),
            "expires_in": round((worker.retry_at - now).total_seconds(), 1) if worker.retry_at else None,
        }
        if worker.retry_at is not None and worker.retry_at > now:
            pools.setdefault(worker.pool, []).append(entry)
        else:
            stale.append(entry)
    healthy = orchestrator["alive"] and all(pools[pool] for pool in POOLS)
    return {"healthy": healthy, "orchestrator": orchestrator, "pools": pools, "stale_workers": stale, "checked_at": now.isoformat()}
