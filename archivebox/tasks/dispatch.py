"""Turning due rows into tick tasks, in batches, under each actor type's concurrency slots.

A dispatcher takes a free slot (a lease that expires), claims a batch of due rows with
one compare-and-swap UPDATE (their ``retry_at`` becomes the batch's *token*, so no other
dispatcher sees them due) and enqueues one tick task for the batch. Three callers
dispatch, all the same way:

* the orchestrator's scan (:func:`dispatch_due`) fills free slots;
* a finished batch passes its slot straight to the next one
  (:func:`archivebox.tasks.ticks.hand_over`), which keeps a busy pool saturated;
* a side effect or a user's action that wakes rows (:func:`wake_rows`) kicks them
  (:func:`kick`), so they start at once.

This module is the tick layer's one interface to the layers around it: side effects,
the CLI and the admin wake rows through :func:`wake_rows` and :func:`kick` only.

Messages are hints: if one is lost, its rows' token passes and they are due again, and a
late copy of the message finds its claims gone.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from archivebox.config import EngineConfig
from archivebox.core.models import Machine
from archivebox.core import leases, rowsql
from archivebox.tasks import registry
from archivebox.tasks.registry import ActorType
from archivebox.tasks.ticks import HOLDER, limit_of, send

logger = logging.getLogger(__name__)

CHUNK = 500


@dataclass(frozen=True)
class Dispatched:
    due: bool  # rows were due (dispatched, or waiting for a slot)
    dispatched: int


def machine_id(config: EngineConfig) -> int:
    return Machine.current(config.machine_id).pk


def new_holder() -> str:
    """A token naming one holding of a slot, passed along from batch to batch."""
    return f"{HOLDER}/{uuid.uuid4().hex[:12]}"


def fill_slot(actor: ActorType, slot: str, holder: str, config: EngineConfig, now: dt.datetime, ids=None) -> list:
    """Claim the next batch of due rows (of ``ids`` if given) and enqueue its tick task."""
    token = now + dt.timedelta(seconds=config.slot_ttl)
    pks = rowsql.dispatch_claim(actor.model, actor.statuses, now, token, config.tick_batch, ids)
    if pks:
        send(actor, pks, token, slot, holder, now)
    return pks


def dispatch_due(actor: ActorType, config: EngineConfig, now: dt.datetime) -> Dispatched:
    """Fill the actor's free slots with batches of its earliest due rows."""
    limit = limit_of(actor, config)
    if limit <= 0:
        return Dispatched(False, 0)
    free = leases.free_slots(actor.name, limit, now)
    if not rowsql.any_due(actor.model, actor.statuses, now):
        return Dispatched(False, 0)
    dispatched = 0
    for slot in free:
        holder = new_holder()
        if not leases.take_slot(slot, holder, now, config.slot_ttl, machine_id(config)):
            continue
        pks = fill_slot(actor, slot, holder, config, now)
        if not pks:
            leases.release_slot(slot, holder)
            break
        dispatched += len(pks)
    return Dispatched(True, dispatched)


def kick(actor: ActorType, rows: Iterable, config: EngineConfig, unless_busy: bool = False) -> int:
    """Dispatch rows that were just made due, if a slot is free; otherwise a finishing batch
    or the orchestrator picks them up. ``rows`` are ids or ``(id, retry_at)`` pairs. With
    ``unless_busy``, only when no batch of the actor type runs (its hand-over takes them)."""
    pks = [row[0] if isinstance(row, tuple) else row for row in rows]
    limit = limit_of(actor, config)
    if not pks or limit <= 0:
        return 0
    now = timezone.now()
    free, busy = leases.slot_states(actor.name, limit, now)
    if unless_busy and busy:
        return 0
    dispatched = 0
    for slot in free:
        holder = new_holder()
        if not leases.take_slot(slot, holder, now, config.slot_ttl, machine_id(config)):
            continue
        claimed = fill_slot(actor, slot, holder, config, now, ids=pks)
        if not claimed:
            leases.release_slot(slot, holder)
            break
        dispatched += len(claimed)
        pks = [pk for pk in pks if pk not in set(claimed)]
        if not pks:
            break
    return dispatched


def wake_rows(model, pks: Iterable) -> int:
    """Make unfinished rows due now (never touching their status); returns how many changed.

    A row a tick has claimed keeps its claim and is marked ``woken``: the tick's own write
    then makes it due at once. The rows are dispatched by the next batch of their actor
    type that finishes (its slot passes on to them) or, when none is running, here.
    """
    pks = list(pks)
    if not pks:
        return 0
    woken = 0
    for start in range(0, len(pks), CHUNK):
        woken += rowsql.wake(model, pks[start:start + CHUNK], timezone.now())
    dispatch_now(model, pks)
    return woken


def dispatch_now(model, pks: list) -> None:
    """Dispatch rows that are due at once, unless a batch of their actor type is running
    (it passes its slot on to them when it finishes)."""
    kick(registry.get(model.__name__), pks, settings.ENGINE, unless_busy=True)
