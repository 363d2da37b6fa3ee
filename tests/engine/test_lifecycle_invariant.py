"""The lifecycle invariant, held by the DB: retry_at is NULL exactly when the status is final."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Crawl, Machine, Process, Snapshot
from archivebox.sideeffects.queue import huey as sideeffects_huey
from archivebox.transitions.cas import move

MODELS = [Crawl, Snapshot, ArchiveResult, Process]
CASES = [(model, status) for model in MODELS for status in model.graph.states]


def case_id(case) -> str:
    model, status = case
    return f"{model.__name__}-{status}"


def new_row(model, **values):
    """An unsaved row of ``model`` with every required column filled in."""
    if model is Crawl:
        return Crawl(urls="https://example.com", **values)
    crawl = Crawl.objects.create(urls="https://example.com")
    if model is Snapshot:
        return Snapshot(crawl=crawl, url=f"https://example.com/{uuid.uuid4()}", **values)
    if model is ArchiveResult:
        return ArchiveResult(crawl=crawl, plugin="noop", hook_name=f"on_Crawl__10_noop_{uuid.uuid4().hex}.sh", **values)
    machine, _ = Machine.objects.get_or_create(guid="test-machine")
    return Process(kind=Process.Kind.HOOK, machine=machine, **values)


@pytest.mark.parametrize("model, status", CASES, ids=map(case_id, CASES))
def test_insert_respects_the_invariant(model, status):
    now = timezone.now()
    final = model.graph.is_final(status)
    wrong, right = (now, None) if final else (None, now)

    with pytest.raises(IntegrityError, match="retry_at_iff_not_final|CHECK constraint"), transaction.atomic():
        new_row(model, status=status, retry_at=wrong).save()
    assert not model.objects.filter(status=status).exists()

    row = new_row(model, status=status, retry_at=right)
    row.save()
    assert model.objects.filter(pk=row.pk, status=status, retry_at=right).exists()


@pytest.mark.parametrize("model", MODELS, ids=[m.__name__ for m in MODELS])
def test_update_respects_the_invariant(model):
    now = timezone.now()
    row = new_row(model, retry_at=now)
    row.save()
    final = sorted(model.graph.finals)[0]

    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.filter(pk=row.pk).update(status=final)
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.filter(pk=row.pk).update(retry_at=None)

    assert model.objects.filter(pk=row.pk).values_list("status", "retry_at").get() == ("queued", now)
    # The legal combination of the same two columns is accepted.
    assert model.objects.filter(pk=row.pk).update(status=final, retry_at=None) == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.filter(pk=row.pk).update(retry_at=now)


def test_default_row_is_initial_and_due():
    before = timezone.now()
    crawl = Crawl.objects.create(urls="https://example.com")
    assert crawl.status == "queued"
    assert before <= crawl.retry_at <= timezone.now()


@pytest.mark.parametrize("model", MODELS, ids=[m.__name__ for m in MODELS])
def test_move_refuses_retry_at_for_a_final_target_and_requires_it_otherwise(model):
    now = timezone.now()
    row = new_row(model, retry_at=now)
    row.save()
    before = model.objects.filter(pk=row.pk).values().get()
    later = now + dt.timedelta(seconds=30)
    give_up = model.graph.give_up.name
    progress = next(t.name for t in model.graph.initial.targets if not t.final)

    with pytest.raises(ValueError, match="a final state takes no retry_at"):
        move(row, "queued", give_up, now=later, retry_at=later)
    with pytest.raises(ValueError, match="a non-final state needs a retry_at"):
        move(row, "queued", progress, now=later)

    assert model.objects.filter(pk=row.pk).values().get() == before
    assert sideeffects_huey.storage.queue_size() == 0
    # The same edges with the right retry_at are accepted.
    assert move(row, "queued", progress, now=later, retry_at=later)
    assert move(row, progress, give_up, now=later)
    assert model.objects.filter(pk=row.pk).values_list("status", "retry_at").get() == (give_up, None)
