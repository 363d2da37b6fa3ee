"""Waking rows: making them due now, and dispatching them at once when a slot is free."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from django.conf import settings
from django.db.models import Case, F, Value, When
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Process
from archivebox.sideeffects.queue import sideeffect
from archivebox.tasks import registry
from archivebox.tasks.dispatch import kick

logger = logging.getLogger(__name__)

# Rows waiting for something that will wake them are parked this far ahead; the date is
# only a safety net in case the wake-up is lost.
PARK = dt.timedelta(hours=1)
CHUNK = 500


def parked(now: dt.datetime) -> dt.datetime:
    return now + PARK


def wake_rows(model, pks: Iterable) -> int:
    """Make unfinished rows due now (never touching their status) and kick them."""
    pks = list(pks)
    woken = 0
    for start in range(0, len(pks), CHUNK):
        chunk = pks[start:start + CHUNK]
        now = timezone.now()
        # A row a tick has claimed keeps its claim and is marked woken; the tick's own write
        # then makes it due at once (see archivebox.transitions.cas.release).
        woken += model.objects.filter(pk__in=chunk, retry_at__gt=now).update(
            retry_at=Case(When(claimed=True, then=F("retry_at")), default=Value(now)),
            woken=Case(When(claimed=True, then=Value(True)), default=F("woken")),
        )
        due = model.objects.filter(pk__in=chunk, retry_at__lte=now).values_list("pk", "retry_at")
        kick(registry.get(model.__name__), due, settings.ENGINE)
    return woken


@sideeffect
def wake_process_owner(process_id) -> None:
    """A Process row was closed by the loop: let its ArchiveResult look at it."""
    owner = Process.objects.filter(pk=process_id).values_list("archiveresult_id", flat=True).first()
    if owner is not None:
        wake_rows(ArchiveResult, [owner])
