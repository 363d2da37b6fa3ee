"""The single write primitive of every transition: one compare-and-swap UPDATE.

``move`` refuses edges the model's graph does not declare, writes ``status`` and
``retry_at`` (None exactly when the target is final) in one conditional UPDATE, and
reports whether it won. Losing is normal (another tick or a user action got there
first) and changes nothing. Side effects are enqueued only after the write commits.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.db import transaction

from archivebox.lifecycle import notify

logger = logging.getLogger("archivebox.transitions")


def move(
    obj,
    source: str,
    target: str,
    *,
    now: dt.datetime,
    claim: dt.datetime | None = None,
    retry_at: dt.datetime | None = None,
    expect: Mapping[str, Any] | None = None,
    fields: Mapping[str, Any] | None = None,
    then: Iterable[Callable[[], None]] = (),
) -> bool:
    """Move ``obj`` from ``source`` to ``target`` if, and only if, it is still as we saw it.

    ``claim`` is the tick's ownership token (the ``retry_at`` its claim wrote); ``expect``
    adds further columns the row must still hold (e.g. ``current_step`` for a self-edge).
    """
    model = type(obj)
    edge = model.graph.edge(source, target)
    if edge.target_final and retry_at is not None:
        raise ValueError(f"{model.__name__} {edge}: a final state takes no retry_at")
    if not edge.target_final and retry_at is None:
        raise ValueError(f"{model.__name__} {edge}: a non-final state needs a retry_at")
    rows = model.objects.filter(pk=obj.pk, status=source, **(expect or {}))
    if claim is not None:
        rows = rows.filter(retry_at=claim)
    values = {**(fields or {}), "status": target, "retry_at": retry_at, "modified_at": now}
    notify("on_transition_start", obj=obj, edge=edge)
    started = time.perf_counter()
    won = rows.update(**values) == 1
    elapsed_ms = (time.perf_counter() - started) * 1000
    if won:
        for name, value in values.items():
            setattr(obj, name, value)
        logger.info("%s %s: %s (%.1f ms)", model.__name__.lower(), obj.pk, edge, elapsed_ms)
        for call in then:
            transaction.on_commit(call)
    else:
        logger.debug("%s %s: %s lost the race", model.__name__.lower(), obj.pk, edge)
    notify("on_transition_end", obj=obj, edge=edge, won=won)
    return won
