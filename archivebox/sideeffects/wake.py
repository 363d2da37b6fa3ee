"""Waking rows: making them due now, and dispatching them at once when a slot is free."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from django.conf import settings
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Process
from archivebox.sideeffects.queue import sideeffect
from archivebox.tasks import registry, rowsql
from archivebox.tasks.dispatch import kick

logger = logging.getLogger(__name__)

# Rows waiting for something that will wake them are parked this far ahead; the date is
# only a safety net in case the wake-up is lost.
PARK = dt.timedelta(hours=1)
CHUNK = 500


def parked(now: dt.datetime) -> dt.datetime:
    return now + PARK


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


@sideeffect
def wake_process_owner(process_id) -> None:
    """A Process row was closed by the loop: let its ArchiveResult look at it."""
    owner = Process.objects.filter(pk=process_id).values_list("archiveresult_id", flat=True).first()
    if owner is not None:
        wake_rows(ArchiveResult, [owner])
