"""Leases that expire: the orchestrator role and the per-actor concurrency slots.

Every operation is one conditional UPDATE whose rowcount says who won, so leases work
the same on SQLite and Postgres, across any number of processes and machines, and a
holder that dies simply stops renewing.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db.models import Q

from archivebox.core.models import Lease
from archivebox.core.rowsql import db_connection

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


def _run(sql: str, params: list) -> int:
    with db_connection().cursor() as cursor:
        cursor.execute(sql.format(table=Lease._meta.db_table), params)
        return cursor.rowcount


def _at(value: dt.datetime | None):
    return db_connection().ops.adapt_datetimefield_value(value)


# The slot operations below run on every dispatch and every batch: raw SQL, one statement each.

def slot_states(actor: str, limit: int, now: dt.datetime) -> tuple[list[str], int]:
    """One read of the actor's slots: those of its first ``limit`` that nobody holds (or
    whose holder let them expire), and how many of all its slots are held."""
    with db_connection().cursor() as cursor:
        cursor.execute(f"SELECT key, expires_at, holder FROM {Lease._meta.db_table} WHERE actor = %s", [actor])
        rows = {key: (expires, holder) for key, expires, holder in cursor.fetchall()}
    keys = slot_keys(actor, limit)
    if any(key not in rows for key in keys):
        ensure_slots(actor, limit)
        return slot_states(actor, limit, now)
    now_db = _at(now)
    field = Lease._meta.get_field("expires_at")

    def held(expires) -> bool:
        return expires is not None and _as_db(field, expires) >= now_db

    busy = sum(1 for expires, holder in rows.values() if holder and held(expires))
    return [key for key in keys if not held(rows[key][0])], busy


def free_slots(actor: str, limit: int, now: dt.datetime) -> list[str]:
    """The actor's slots (of its first ``limit``) that nobody holds, or whose holder let them expire."""
    return slot_states(actor, limit, now)[0]


def _as_db(field, value):
    """A datetime read back raw, in the form ``_at`` produces (to compare like with like)."""
    return value if isinstance(value, str) else _at(value)


def take_slot(key: str, holder: str, now: dt.datetime, ttl: float, machine_id: int | None = None) -> bool:
    """Take a free (or expired) slot for ``holder``, a token naming this one dispatch, on ``machine_id``."""
    return bool(_run("UPDATE {table} SET holder = %s, machine_id = %s, acquired_at = %s, expires_at = %s "
                     "WHERE key = %s AND (expires_at IS NULL OR expires_at < %s)",
                     [holder, machine_id, _at(now), _at(now + dt.timedelta(seconds=ttl)), key, _at(now)]))


def renew_slot(key: str, holder: str, now: dt.datetime, ttl: float) -> bool:
    """Keep holding the slot (a finished batch passing it to the next one); False if it was lost."""
    return bool(_run("UPDATE {table} SET expires_at = %s WHERE key = %s AND holder = %s",
                     [_at(now + dt.timedelta(seconds=ttl)), key, holder]))


def release_slot(key: str, holder: str) -> bool:
    """Free the slot if ``holder`` still has it."""
    return bool(_run("UPDATE {table} SET holder = '', expires_at = NULL WHERE key = %s AND holder = %s", [key, holder]))
