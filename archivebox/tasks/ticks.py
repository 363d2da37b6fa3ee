"""The tick: claim one row, let its actor type decide, apply exactly one decision.

Ownership rule (the one thing every reader of this module must know): a tick owns its
row from the moment its compare-and-swap moves ``retry_at`` from the value the
dispatcher saw to ``now + MAX_TICK_TIME`` (the *claim*), until it writes again. Every
write of the tick filters on the claim, so a tick that overran its claim, or whose row
was changed meanwhile (a cancel, a wake), writes nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import random
import socket
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from archivebox.config import EngineConfig
from archivebox.lifecycle import notify
from archivebox.tasks import leases, registry
from archivebox.tasks.queue import huey
from archivebox.tasks.registry import ActorType, Go, Wait
from archivebox.transitions.cas import release

logger = logging.getLogger(__name__)

HOLDER = f"{socket.gethostname()}:{os.getpid()}"


class TickTimeout(RuntimeError):
    """The tick decided too late: its claim may have passed to another tick."""


@dataclass(frozen=True)
class TickResult:
    outcome: str  # "lost", "missing", "transition", "transition-lost", "wait", "error", "gave-up"
    detail: str = ""


def limit_of(actor: ActorType, config: EngineConfig) -> int:
    return int(config.concurrency.get(actor.name, 1))


@huey.task(name="tick")
def tick(actor_name: str, pk: uuid.UUID, seen: dt.datetime, slot: str) -> None:
    """Huey entry point: one tick of row ``pk`` of ``actor_name``, holding ``slot``."""
    close_old_connections()
    run_tick(registry.get(actor_name), pk, seen, slot, settings.ENGINE)


def run_tick(actor: ActorType, pk, seen: dt.datetime, slot: str | None, config: EngineConfig, now: dt.datetime | None = None) -> TickResult:
    """Claim, decide, apply; then pass the slot on. Never raises for a failing handler.

    ``now`` drives a tick at a given time (tests); by default it is the wall clock.
    """
    try:
        return _tick(actor, pk, seen, config, now or timezone.now())
    finally:
        if slot is not None:
            hand_over(actor, slot, pk, config, now)


def claim_row(model, pk, seen: dt.datetime, now: dt.datetime, max_tick_time: float) -> dt.datetime | None:
    """Compare-and-swap ``retry_at`` from ``seen`` to a fresh claim; None if someone else moved it."""
    claim = now + dt.timedelta(seconds=max_tick_time)
    if claim == seen:
        claim += dt.timedelta(microseconds=1)
    won = model.objects.filter(pk=pk, retry_at=seen).update(retry_at=claim, claimed=True, woken=False)
    return claim if won else None


def _tick(actor: ActorType, pk, seen: dt.datetime, config: EngineConfig, now: dt.datetime) -> TickResult:
    claim = claim_row(actor.model, pk, seen, now, config.max_tick_time)
    if claim is None:
        logger.debug("%s %s: already claimed or moved, skipping", actor.name, pk)
        return TickResult("lost")
    obj = actor.model.objects.filter(pk=pk).first()
    if obj is None:
        return TickResult("missing")
    started = time.monotonic()
    notify("on_actor_tick_start", actor_type=actor, obj=obj)
    try:
        decision = actor.handler(obj, now=now, config=config)
        if time.monotonic() - started > config.max_tick_time:
            raise TickTimeout(f"decided after {time.monotonic() - started:.1f}s, over MAX_TICK_TIME={config.max_tick_time}s")
        return apply(decision, obj, claim, now)
    except Exception as err:
        logger.exception("%s %s: tick failed", actor.name, pk)
        notify("on_actor_tick_exception", actor_type=actor, obj=obj, exception=err)
        return fail(actor, obj, claim, err, now, config)
    finally:
        notify("on_actor_tick_end", actor_type=actor, obj=obj)


def apply(decision, obj, claim: dt.datetime, now: dt.datetime) -> TickResult:
    if isinstance(decision, Go):
        won = decision.transition(obj, claim=claim, now=now, **decision.kwargs)
        return TickResult("transition" if won else "transition-lost", str(decision))
    if isinstance(decision, Wait):
        updates = release(now, decision.until)
        if obj.tick_errors:
            updates.update(tick_errors=0, last_error="")
        if not type(obj).objects.filter(pk=obj.pk, retry_at=claim).update(**updates):
            return TickResult("wait-lost", decision.reason)
        for request in decision.requests:
            request()
        return TickResult("wait", decision.reason)
    raise TypeError(f"a tick handler must return Go or Wait, got {decision!r}")


def backoff(errors: int, config: EngineConfig) -> float:
    """Exponential backoff with 10% jitter, capped at TICK_BACKOFF_MAX."""
    delay = min(config.tick_backoff_base * 2 ** (errors - 1), config.tick_backoff_max)
    return delay * random.uniform(0.9, 1.1)


def fail(actor: ActorType, obj, claim: dt.datetime, err: Exception, now: dt.datetime, config: EngineConfig) -> TickResult:
    """Count the error; retry with backoff, or give up into the final failed state."""
    errors = obj.tick_errors + 1
    message = f"{type(err).__name__}: {err}".splitlines()[0][:500]
    if errors >= config.max_tick_errors:
        won = actor.give_up(obj, claim=claim, now=now, error=f"gave up after {errors} failed ticks: {message}")
        return TickResult("gave-up" if won else "transition-lost", message)
    retry_at = now + dt.timedelta(seconds=backoff(errors, config))
    type(obj).objects.filter(pk=obj.pk, retry_at=claim).update(tick_errors=errors, last_error=message, **release(now, retry_at))
    return TickResult("error", message)


def hand_over(actor: ActorType, slot: str, finished, config: EngineConfig, now: dt.datetime | None = None) -> bool:
    """Give the slot of a finished tick to the next due row, or free it if none is due."""
    now = now or timezone.now()
    limit = limit_of(actor, config)
    state = leases.slot_state(actor.name, limit, now)
    if slot in state.free or slot not in {leases.slot_key(actor.name, i) for i in range(limit)}:
        leases.release_slot(slot, finished)
        return False
    busy = [row for row in state.busy_rows if row != finished]
    following = actor.due(now).exclude(pk__in=busy).order_by("retry_at").values_list("pk", "retry_at").first()
    if following is not None and leases.hand_over_slot(slot, finished, following[0], HOLDER, now, config.slot_ttl):
        tick(actor.name, following[0], following[1], slot)
        return True
    leases.release_slot(slot, finished)
    return False
