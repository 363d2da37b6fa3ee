"""Leases that expire: the orchestrator role and the per-actor concurrency slots.

Every operation is one conditional UPDATE whose rowcount says who won, so leases work
the same on SQLite and Postgres, across any number of processes and machines, and a
holder that dies simply stops renewing.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction
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
    return bool(Lease.objects.filter(key=key, holder=holder).update(holder="", expires_at=None, row_id=None))


def holder_of(key: str, now: dt.datetime) -> Lease | None:
    """The live lease row for ``key``, or None when nobody holds it."""
    return Lease.objects.filter(key=key, expires_at__gte=now).exclude(holder="").first()


# Concurrency slots -----------------------------------------------------------------

def slot_key(actor: str, index: int) -> str:
    return f"slot:{actor}:{index}"


@dataclass(frozen=True)
class SlotState:
    free: list[str]
    busy_rows: list[uuid.UUID]


def ensure_slots(actor: str, limit: int) -> None:
    Lease.objects.bulk_create([Lease(key=slot_key(actor, i), actor=actor) for i in range(limit)], ignore_conflicts=True)


def slot_state(actor: str, limit: int, now: dt.datetime) -> SlotState:
    """Which of the actor's ``limit`` slots are free, and which rows the busy ones hold."""
    keys = [slot_key(actor, i) for i in range(limit)]
    rows = list(Lease.objects.filter(key__in=keys).values_list("key", "row_id", "expires_at"))
    if len(rows) < limit:
        ensure_slots(actor, limit)
        rows = list(Lease.objects.filter(key__in=keys).values_list("key", "row_id", "expires_at"))
    free = [key for key, _, expires in rows if expires is None or expires < now]
    busy = [row for _, row, expires in rows if row is not None and expires is not None and expires >= now]
    return SlotState(free=sorted(free, key=keys.index), busy_rows=busy)


def _assign(slots, actor: str, row_id: uuid.UUID, holder: str, now: dt.datetime, ttl: float) -> bool:
    """Point the matching slot at ``row_id``, unless another slot of the actor already holds it.

    The unique index on (actor, row_id) makes the second of two racing dispatchers fail.
    A slot left by a dead worker (expired) gives its row up here.
    """
    values = dict(row_id=row_id, holder=holder, acquired_at=now, expires_at=now + dt.timedelta(seconds=ttl))
    for _ in range(2):
        try:
            with transaction.atomic():
                return bool(slots.update(**values))
        except IntegrityError:
            if not Lease.objects.filter(actor=actor, row_id=row_id, expires_at__lt=now).update(row_id=None):
                return False  # a live slot holds the row: it is dispatched already
    return False


def take_slot(key: str, row_id: uuid.UUID, holder: str, now: dt.datetime, ttl: float) -> bool:
    """Claim a free slot for dispatching ``row_id``."""
    return _assign(Lease.objects.filter(Q(key=key) & _free(now)), actor_of(key), row_id, holder, now, ttl)


def hand_over_slot(key: str, old_row: uuid.UUID, new_row: uuid.UUID, holder: str, now: dt.datetime, ttl: float) -> bool:
    """Pass a slot straight from a finished tick to the next due row, without freeing it."""
    return _assign(Lease.objects.filter(key=key, row_id=old_row), actor_of(key), new_row, holder, now, ttl)


def actor_of(key: str) -> str:
    return key.split(":")[1]


def release_slot(key: str, row_id: uuid.UUID) -> bool:
    """Free the slot if it still belongs to the tick of ``row_id``."""
    return bool(Lease.objects.filter(key=key, row_id=row_id).update(row_id=None, holder="", expires_at=None))
