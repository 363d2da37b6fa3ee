"""Shared pieces of the stateful models: ids, the status/retry_at pair and its invariant."""

from __future__ import annotations

import os
import time
import uuid
from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils import timezone

from archivebox.lifecycle import notify
from archivebox.core.graph import StateGraph


def uuid7() -> uuid.UUID:
    """A time-ordered UUID (RFC 9562 version 7), so new rows land at the end of indexes."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 68 & 0xFFF) << 64 | 0b10 << 62 | rand & ((1 << 62) - 1)
    return uuid.UUID(int=value)


class ObservedModel(models.Model):
    """Fires the object lifecycle hooks (init, clean, save) for plugins."""

    class Meta:
        abstract = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        notify("on_object_init", obj=self)

    def clean(self):
        super().clean()
        notify("on_object_clean", obj=self)

    def save(self, *args, **kwargs):
        notify("on_object_save", obj=self)
        super().save(*args, **kwargs)


def status_field(graph: type[StateGraph]) -> models.CharField:
    """The status column of a stateful model: its choices and default come from the graph."""
    return models.CharField(max_length=16, choices=graph.choices(), default=graph.initial.name, db_index=True)


def lifecycle_constraints(graph: type[StateGraph], prefix: str) -> list:
    """A non-final row always has a ``retry_at``; a final row never has one."""
    finals = sorted(graph.finals)
    return [
        models.CheckConstraint(
            condition=(Q(status__in=finals) & Q(retry_at__isnull=True)) | (~Q(status__in=finals) & Q(retry_at__isnull=False)),
            name=f"{prefix}_retry_at_iff_not_final",
        ),
    ]


def due_index(prefix: str) -> models.Index:
    """Partial index over unfinished rows only, so the orchestrator's scan never touches finished rows."""
    return models.Index(fields=["retry_at"], name=f"{prefix}_due", condition=Q(retry_at__isnull=False))


class StatefulModel(ObservedModel):
    """A DB row that is a state machine: ``status`` is its state, ``retry_at`` when to look again.

    Ownership rule: a tick owns the row while ``retry_at`` equals the value its
    compare-and-swap claim wrote; every write of a tick filters on that value.
    """

    graph: ClassVar[type[StateGraph]]

    retry_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    # True while a tick holds its claim; a wake that arrives then sets ``woken`` instead of
    # moving retry_at (which would break the claim), and the tick's own write honours it.
    claimed = models.BooleanField(default=False)
    woken = models.BooleanField(default=False)
    tick_errors = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    @property
    def is_final(self) -> bool:
        return self.graph.is_final(self.status)
