"""Turning due rows into tick tasks, under each actor type's concurrency slots.

Three callers dispatch, all through the same slot leases:

* the orchestrator's scan (``dispatch_due``) finds due rows and fills free slots;
* a finishing tick hands its slot straight to the next due row
  (:func:`archivebox.tasks.ticks.hand_over`), which keeps a busy pool saturated without
  waiting for the next scan;
* a side effect that wakes rows (sets ``retry_at`` to now) kicks them (``kick``) so they
  start at once when a slot is free.

A slot records the row it was taken for, so a dispatched row is never dispatched again
while its slot lives. Messages are hints: if one is lost, the slot expires and the row
is due again.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.utils import timezone

from archivebox.config import EngineConfig
from archivebox.tasks import leases
from archivebox.tasks.registry import ActorType
from archivebox.tasks.ticks import HOLDER, limit_of, tick

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class Dispatched:
    due: bool  # rows were due (dispatched or waiting for a slot)
    dispatched: int


def dispatch_due(actor: ActorType, config: EngineConfig, now: dt.datetime) -> Dispatched:
    """Fill the actor's free slots with its earliest due rows."""
    limit = limit_of(actor, config)
    if limit <= 0:
        return Dispatched(False, 0)
    state = leases.slot_state(actor.name, limit, now)
    due = actor.due(now).exclude(pk__in=state.busy_rows).order_by("retry_at")
    if not state.free:
        return Dispatched(due.exists(), 0)
    rows = list(due.values_list("pk", "retry_at")[: len(state.free)])
    dispatched = 0
    for (pk, seen), key in zip(rows, state.free):
        if leases.take_slot(key, pk, HOLDER, now, config.slot_ttl):
            tick(actor.name, pk, seen, key)
            dispatched += 1
    return Dispatched(bool(rows), dispatched)


def kick(actor: ActorType, rows: Iterable[tuple[uuid.UUID, dt.datetime]], config: EngineConfig) -> int:
    """Dispatch rows that were just made due, if slots are free; the rest wait for a slot."""
    rows = list(rows)
    limit = limit_of(actor, config)
    if not rows or limit <= 0:
        return 0
    now = timezone.now()
    state = leases.slot_state(actor.name, limit, now)
    busy = set(state.busy_rows)
    dispatched = 0
    for (pk, seen), key in zip((r for r in rows if r[0] not in busy), state.free):
        if leases.take_slot(key, pk, HOLDER, now, config.slot_ttl):
            tick(actor.name, pk, seen, key)
            dispatched += 1
    return dispatched
