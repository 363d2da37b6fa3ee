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

from archivebox.core import rowsql
from archivebox.core.graph import State
from archivebox.lifecycle import notify

logger = logging.getLogger("archivebox.transitions")


def move(
    obj,
    source: State | str | Iterable[State | str],
    target: State | str,
    *,
    now: dt.datetime,
    claim: dt.datetime | None = None,
    retry_at: dt.datetime | None = None,
    expect: Mapping[str, Any] | None = None,
    fields: Mapping[str, Any] | None = None,
    then: Iterable[Callable[[], None]] = (),
) -> bool:
    """Move ``obj`` from ``source`` to ``target`` if, and only if, it is still as we saw it.

    ``source`` is one status, or several for a family of edges (give up from any
    unfinished state). ``claim`` is the tick's ownership token (the ``retry_at`` its claim
    wrote); ``expect`` adds conditions the row must still meet (e.g. on ``current_step``
    for a self-edge). A transition that wins also resets the row's tick error count.
    """
    model = type(obj)
    target = str(target)
    sources = [str(source)] if isinstance(source, (str, State)) else [str(s) for s in source]
    if sources == [target] and model.graph.is_final(target):
        return False  # a repeat of a transition this object already made: nothing to do
    edges = [model.graph.edge(s, target) for s in sources]
    edge = edges[0] if len(edges) == 1 else f"{'|'.join(sources)} -> {target}"
    if model.graph.is_final(target) and retry_at is not None:
        raise ValueError(f"{model.__name__} {edge}: a final state takes no retry_at")
    if not model.graph.is_final(target) and retry_at is None:
        raise ValueError(f"{model.__name__} {edge}: a non-final state needs a retry_at")
    where = {"id": obj.pk, "status__in": sources, **(expect or {})}
    if claim is not None:
        where["retry_at"] = claim
    values = {"tick_errors": 0, **(fields or {}), "status": target, "modified_at": now, "claimed": False, "woken": False}
    notify("on_transition_start", obj=obj, edge=edge)
    started = time.perf_counter()
    won = rowsql.update(model, values, where, retry_at=(now, retry_at)) == 1
    elapsed_ms = (time.perf_counter() - started) * 1000
    if won:
        values["retry_at"] = retry_at
        for name, value in values.items():
            setattr(obj, name, value)
        logger.info("%s %s: %s (%.1f ms)", model.__name__.lower(), obj.pk, edge, elapsed_ms)
        for call in then:
            transaction.on_commit(call)
    else:
        logger.debug("%s %s: %s lost the race", model.__name__.lower(), obj.pk, edge)
    notify("on_transition_end", obj=obj, edge=edge, won=won)
    return won
