"""Waking the owner of a Process row the reconciliation loop closed."""

from __future__ import annotations

from archivebox.core.models import ArchiveResult, Process
from archivebox.sideeffects.queue import sideeffect
from archivebox.transitions.effects import WakeProcessOwner
from archivebox.tasks.dispatch import wake_rows


@sideeffect(WakeProcessOwner)
def wake_process_owner(process_id) -> None:
    """A Process row was closed by the loop: let its ArchiveResult look at it."""
    owner = Process.objects.filter(pk=process_id).values_list("archiveresult_id", flat=True).first()
    if owner is not None:
        wake_rows(ArchiveResult, [owner])
