"""Actor types and the decisions their ticks return.

An :class:`ActorType` says which rows it ticks (a model and the statuses it handles)
and how to decide (``handler``). A handler reads and decides; it never writes. It
returns exactly one decision:

* :class:`Go`: apply one transition (a function from :mod:`archivebox.transitions`);
* :class:`Wait`: nothing to do yet, look again at ``until``.

The tick runner applies the decision under the row's claim, so a handler stays a pure
function of what it read, and "one transition per tick" holds by construction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import models

from archivebox.transitions.effects import Effect


@dataclass(frozen=True)
class Go:
    """Apply ``transition(obj, claim=..., now=..., **kwargs)``."""

    transition: Callable[..., bool]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.transition.__name__


@dataclass(frozen=True)
class Wait:
    """Leave the row as it is and look again at ``until``.

    ``requests`` are side-effect calls to enqueue again (idempotent, keyed), used when
    the tick finds that an earlier side effect never ran, e.g. its message was lost.
    """

    until: dt.datetime
    reason: str = ""
    requests: tuple[Effect, ...] = ()

    def __str__(self) -> str:
        return f"wait ({self.reason})" if self.reason else "wait"


Decision = Go | Wait


@dataclass(frozen=True)
class ActorType:
    name: str
    model: type[models.Model]
    handler: Callable[..., Decision]
    give_up: Callable[..., bool]
    statuses: tuple[str, ...]
    # Foreign keys every handler call follows, loaded once per batch instead of once per row.
    related: tuple[str, ...] = ()

    def due(self, now: dt.datetime):
        """Rows of this actor type whose ``retry_at`` has come."""
        return self.model.objects.filter(retry_at__lte=now, status__in=self.statuses)


ACTOR_TYPES: dict[str, ActorType] = {}


def register(actor_type: ActorType) -> ActorType:
    ACTOR_TYPES[actor_type.name] = actor_type
    return actor_type


def get(name: str) -> ActorType:
    return ACTOR_TYPES[name]
