"""Creating a snapshot's (or crawl's) ArchiveResults, one per enabled hook, and stepping them."""

from __future__ import annotations

import datetime as dt
import logging

from django.utils import timezone

from archivebox.core.graphs import ArchiveResultGraph
from archivebox.core.models import ArchiveResult, Crawl, Snapshot
from archivebox.core.reads import expected_hooks, parked, results_of
from archivebox.hooks.discovery import hook_order, stopped_at_cleanup
from archivebox.sideeffects import index as index_effects
from archivebox.sideeffects.queue import sideeffect
from archivebox.transitions.effects import ResultFinished, StopBackground, WakeStep
from archivebox.tasks.dispatch import wake_rows
from archivebox.core import rowsql

logger = logging.getLogger(__name__)

def create_results(crawl: Crawl, snapshot: Snapshot | None, now: dt.datetime) -> int:
    """One queued ArchiveResult per expected hook; existing rows are left alone."""
    current = (snapshot or crawl).current_step
    rows = [
        ArchiveResult(
            crawl=crawl, snapshot=snapshot, plugin=hook.plugin, hook_name=hook.hook_name, step=hook.step,
            background=hook.background, retry_at=now if hook.step <= current else parked(now),
        )
        for hook in expected_hooks(crawl, snapshot)
    ]
    rowsql.insert_new(rows)
    return len(rows)


def queued_results(snapshot_id, step: int) -> list[tuple]:
    """``(id, background, retry_at)`` of the snapshot's queued results of ``step`` or earlier,
    in one hand-written read (once per snapshot start and per step)."""
    rows = rowsql.values(ArchiveResult, ("id", "background", "retry_at", "status", "step"), {"snapshot": snapshot_id})
    return [(pk, background, retry_at) for pk, background, retry_at, status, result_step in rows
            if status == ArchiveResultGraph.queued and result_step <= step]


@sideeffect(WakeStep)
def wake_step(owner_kind: str, owner_id, step: int) -> None:
    """The owner reached ``step``: its queued results of that step (and earlier) may start."""
    if owner_kind == "Snapshot":  # once per step of every snapshot: a hand-written read
        queued = [pk for pk, _, _ in queued_results(owner_id, step)]
    else:
        queued = results_of(owner_kind, owner_id).filter(status=ArchiveResultGraph.queued, step__lte=step).values_list("pk", flat=True)
    wake_rows(ArchiveResult, queued)


@sideeffect(StopBackground)
def stop_background(owner_kind: str, owner_id, before: str = "", plugins: tuple[str, ...] = ()) -> None:
    """The owner no longer needs its running background services (its cleanup, or a hook
    that waits for background cleanup: then only those ordered before that hook, ``before``),
    or those of ``plugins`` (a wave, dependents first): ask their watchers to stop them
    (SIGTERM, their plugin's timeout as the grace, then SIGKILL). ``.finite.bg`` hooks are
    awaited, not stopped."""
    running = results_of(owner_kind, owner_id).filter(background=True, status=ArchiveResultGraph.started, stop_requested_at__isnull=True)
    if plugins:
        running = running.filter(plugin__in=plugins)
    ids = [pk for pk, hook_name in running.values_list("pk", "hook_name")
           if stopped_at_cleanup(hook_name) and (not before or hook_order(hook_name) < hook_order(before))]
    if ids:
        ArchiveResult.objects.filter(pk__in=ids, stop_requested_at__isnull=True).update(stop_requested_at=timezone.now())


def wake_waiting(snapshot_id, crawl_id) -> None:
    """A hook became ready or ended: the owner's hooks that may wait for it (queued, never
    run, of a step the owner reached) look again now."""
    if snapshot_id is not None:
        found = rowsql.values(Snapshot, ("current_step",), {"id": snapshot_id})
        owner_kind, owner_id = "Snapshot", snapshot_id
    else:
        found = rowsql.values(Crawl, ("current_step",), {"id": crawl_id})
        owner_kind, owner_id = "Crawl", crawl_id
    if not found:
        return
    waiting = results_of(owner_kind, owner_id).filter(status=ArchiveResultGraph.queued, attempts=0, step__lte=found[0][0])
    wake_rows(ArchiveResult, list(waiting.values_list("pk", flat=True)))


def unfinished_foreground(snapshot_id, crawl_id, step: int) -> bool:
    """Is a foreground result of this snapshot (else of this crawl's own hooks), at ``step``
    or earlier, still unfinished? (Once per hook run: a hand-written read, see rowsql.)"""
    owner = {"snapshot": snapshot_id} if snapshot_id is not None else {"crawl": crawl_id, "snapshot__isnull": True}
    return bool(rowsql.values(ArchiveResult, ("id",), {**owner, "step__lte": step, "background": False, "retry_at__isnull": False},
                              limit=1))


@sideeffect(ResultFinished)
def result_finished(result_id) -> None:
    """A result is final: its owner may advance a step or seal; its index changes.

    Runs once per hook run, so its reads are hand-written statements (see rowsql)."""
    found = rowsql.values(ArchiveResult, ("snapshot_id", "crawl_id", "step", "background"), {"id": result_id})
    if not found:
        return
    snapshot_id, crawl_id, step, _background = found[0]
    wake_waiting(snapshot_id, crawl_id)  # hooks that waited for it (to be ready, or final)
    owner_model, owner_id = (Snapshot, snapshot_id) if snapshot_id is not None else (Crawl, crawl_id)
    # The owner only has something to decide once no foreground result of this step (or an
    # earlier one) is left unfinished.
    if not unfinished_foreground(snapshot_id, crawl_id, step):
        wake_rows(owner_model, [owner_id])
    if snapshot_id is not None:
        index_effects.write_index(snapshot_id)
        if rowsql.values(Snapshot, ("retry_at",), {"id": snapshot_id}) == [(None,)]:
            # A background hook of a sealed snapshot was recorded: its crawl may be done now.
            wake_rows(Crawl, [crawl_id])
