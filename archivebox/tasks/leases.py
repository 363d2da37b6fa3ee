"""Leases that expire: the orchestrator role and the per-actor concurrency slots.

Every operation is one conditional UPDATE whose rowcount says who won, so leases work
the same on SQLite and Postgres, across any number of processes and machines, and a
holder that dies simply stops renewing.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import connection
from django.db.models import Q

from archivebox.core.models import Lease

logger = logging.getLogger(__name__)

ORCHESTRATOR = "orchestrator"


def _free(now: dt.datetime) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__lt=now)


def acquire(key: str, holder: str, now: dt.datetime, ttl: float, machine_id: int | None = None) -> bool:
    """Take lease ``key`` for ``holder`` if it is free or expired, or renew it if ``holder`` has it."""
    expires = now + dt.timedelta(seconds=ttl)
    won = Lease.objects.filter(Q(key=key) & (Q(holder=holder) | _free(now))).update(
        holder=holder, expires_at=expires, machine_id=machine_id, acquired_at=now
    )
    if won:
        return True
    if not Lease.objects.filter(key=key).exists():
        Lease.objects.bulk_create([Lease(key=key)], ignore_conflicts=True)
        return acquire(key, holder, now, ttl, machine_id)
    return False


def release(key: str, holder: str) -> bool:
    """Give up ``key`` if ``holder`` still has it."""
    return bool(Lease.objects.filter(key=key, holder=holder).update(holder="", expires_at=None))


def holder_of(key: str, now: dt.datetime) -> Lease | None:
    """The live lease row for ``key``, or None when nobody holds it."""
    return Lease.objects.filter(key=key, expires_at__gte=now).exclude(holder="").first()


# Concurrency slots -----------------------------------------------------------------

def slot_key(actor: str, index: int) -> str:
    return f"slot:{actor}:{index}"


def slot_keys(actor: str, limit: int) -> list[str]:
    return [slot_key(actor, i) for i in range(limit)]


def ensure_slots(actor: str, limit: int) -> None:
    Lease.objects.bulk_create([Lease(key=key, actor=actor) for key in slot_keys(actor, limit)], ignore_conflicts=True)


def free_slots(actor: str, limit: int, now: dt.datetime) -> list[str]:
    """The actor's slots (of its first ``limit``) that nobody holds, or whose holder let them expire."""
    keys = slot_keys(actor, limit)
    rows = dict(Lease.objects.filter(key__in=keys).values_list("key", "expires_at"))
    if len(rows) < limit:
        ensure_slots(actor, limit)
        rows = dict(Lease.objects.filter(key__in=keys).values_list("key", "expires_at"))
    return [key for key in keys if rows.get(key) is None or rows[key] < now]


def busy_slots(actor: str, now: dt.datetime) -> int:
    """How many of the actor's slots are held (a wake checks this on every call: raw SQL)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {Lease._meta.db_table} WHERE actor = %s AND expires_at >= %s AND holder <> ''",
                       [actor, connection.ops.adapt_datetimefield_value(now)])
        return cursor.fetchone()[0]


def take_slot(key: str, holder: str, now: dt.datetime, ttl: float) -> bool:
    """Take a free (or expired) slot for ``holder``, a token naming this one dispatch."""
    return bool(Lease.objects.filter(Q(key=key) & _free(now)).update(
        holder=holder, acquired_at=now, expires_at=now + dt.timedelta(seconds=ttl)))


def renew_slot(key: str, holder: str, now: dt.datetime, ttl: float) -> bool:
    """Keep holding the slot (a finished batch passing it to the next one); False if it was lost."""
    return bool(Lease.objects.filter(key=key, holder=holder).update(expires_at=now + dt.timedelta(seconds=ttl)))


def release_slot(key: str, holder: str) -> bool:
    """Free the slot if ``holder`` still has it."""
    return bool(Lease.objects.filter(key=key, holder=holder).update(holder="", expires_at=None))
