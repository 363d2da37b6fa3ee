"""Transitions: one compare-and-swap write each, idempotent, side effects only after commit."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from archivebox.core.models import Crawl, Snapshot
from archivebox.sideeffects.queue import huey as sideeffects_huey
from archivebox.tasks.ticks import claim_row
from archivebox.transitions.cas import move
from archivebox.transitions.crawl import (
    transition_crawl_advance_step,
    transition_crawl_give_up,
    transition_crawl_queued_to_started,
    transition_crawl_started_to_sealed,
)
from archivebox.transitions.snapshot import transition_snapshot_advance_step

ROWS = 50


def enqueued() -> list[tuple[str, tuple]]:
    """The side-effect tasks waiting on the ``sideeffects`` queue, as (name, args)."""
    return [(task.name, task.args) for task in sideeffects_huey.pending()]


def snapshot_of(model, pk) -> dict:
    return model.objects.filter(pk=pk).values().get()


def make_crawl(now: dt.datetime, **values) -> Crawl:
    return Crawl.objects.create(urls="https://example.com", retry_at=values.pop("retry_at", now), **values)


def race(pks, first, second):
    """Run ``first(pk)`` and ``second(pk)`` on two threads, released together for each pk.

    Each thread reads its own copy of the row (on its own DB connection) before the
    barrier, so both start from the same state. Returns [(first won, second won)].
    """
    barrier = threading.Barrier(2)
    outcomes = {0: [], 1: []}
    errors = []

    def worker(index, transition):
        try:
            for pk in pks:
                obj = Crawl.objects.get(pk=pk)
                barrier.wait(timeout=30)
                outcomes[index].append(transition(obj))
        except BaseException as err:  # reported by the test thread
            errors.append(err)
            barrier.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, fn)) for i, fn in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    return list(zip(outcomes[0], outcomes[1]))


def test_racing_different_transitions_exactly_one_wins_per_row():
    now = timezone.now()
    t_cancel, t_start = now + dt.timedelta(seconds=1), now + dt.timedelta(seconds=2)
    pks = [make_crawl(now).pk for _ in range(ROWS)]

    results = race(
        pks,
        lambda c: transition_crawl_give_up(c, now=t_cancel, error="cancelled"),
        lambda c: transition_crawl_queued_to_started(c, now=t_start),
    )

    assert len(results) == ROWS
    assert all(a != b for a, b in results), results
    effects = enqueued()
    assert len(effects) == ROWS
    for pk, (cancel_won, _) in zip(pks, results):
        row = snapshot_of(Crawl, pk)
        if cancel_won:
            assert (row["status"], row["retry_at"], row["last_error"], row["finished_at"]) == ("failed", None, "cancelled", t_cancel)
            assert row["started_at"] is None and row["modified_at"] == t_cancel
            assert ("sideeffect.crawl_finished", (pk,)) in effects
        else:
            assert (row["status"], row["started_at"], row["last_error"], row["finished_at"]) == ("started", t_start, "", None)
            assert row["retry_at"] == t_start + dt.timedelta(seconds=10) and row["modified_at"] == t_start
            assert ("sideeffect.crawl_started", (pk,)) in effects


def test_racing_the_same_transition_exactly_one_wins_per_row():
    now = timezone.now()
    pks = [make_crawl(now).pk for _ in range(ROWS)]
    t_a, t_b = now + dt.timedelta(seconds=1), now + dt.timedelta(seconds=2)

    results = race(pks, lambda c: transition_crawl_queued_to_started(c, now=t_a),
                   lambda c: transition_crawl_queued_to_started(c, now=t_b))

    assert sorted(map(sum, results)) == [1] * ROWS
    for pk, (a_won, _) in zip(pks, results):
        winner = t_a if a_won else t_b
        assert Crawl.objects.filter(pk=pk).values_list("status", "started_at", "modified_at").get() == ("started", winner, winner)
    assert sorted(args for _, args in enqueued()) == sorted((pk,) for pk in pks)


def test_repeated_transition_is_a_no_op():
    now = timezone.now()
    crawl = make_crawl(now)
    stale_copy = Crawl.objects.get(pk=crawl.pk)

    assert transition_crawl_queued_to_started(crawl, now=now)
    after = snapshot_of(Crawl, crawl.pk)
    later = now + dt.timedelta(seconds=3)

    assert not transition_crawl_queued_to_started(crawl, now=later)
    assert not transition_crawl_queued_to_started(stale_copy, now=later)
    assert not transition_crawl_give_up(stale_copy, now=later, error="late cancel")

    assert snapshot_of(Crawl, crawl.pk) == after
    assert stale_copy.status == "queued"
    assert enqueued() == [("sideeffect.crawl_started", (crawl.pk,))]


def test_stale_claim_writes_nothing():
    now = timezone.now()
    crawl = make_crawl(now)
    first_claim = claim_row(Crawl, crawl.pk, now, now, max_tick_time=10)
    assert first_claim == now + dt.timedelta(seconds=10)
    # The first tick overran; the row came due again and a second tick claimed it.
    second_claim = claim_row(Crawl, crawl.pk, first_claim, first_claim, max_tick_time=10)
    assert second_claim is not None and second_claim != first_claim
    before = snapshot_of(Crawl, crawl.pk)

    assert not transition_crawl_queued_to_started(crawl, now=first_claim, claim=first_claim)
    assert snapshot_of(Crawl, crawl.pk) == before
    assert enqueued() == []

    assert transition_crawl_queued_to_started(crawl, now=first_claim, claim=second_claim)
    assert snapshot_of(Crawl, crawl.pk)["status"] == "started"
    assert len(enqueued()) == 1


def test_claim_row_is_a_compare_and_swap():
    now = timezone.now()
    crawl = make_crawl(now)
    assert claim_row(Crawl, crawl.pk, now - dt.timedelta(seconds=1), now, 10) is None
    assert Crawl.objects.get(pk=crawl.pk).retry_at == now
    claim = claim_row(Crawl, crawl.pk, now, now, 10)
    assert Crawl.objects.get(pk=crawl.pk).retry_at == claim
    assert claim_row(Crawl, crawl.pk, now, now, 10) is None
    # A claim equal to what was seen would not change the row: it is nudged.
    assert claim_row(Crawl, crawl.pk, claim, claim - dt.timedelta(seconds=10), 10) == claim + dt.timedelta(microseconds=1)


def test_expect_guards_a_self_edge():
    now = timezone.now()
    crawl = make_crawl(now)
    assert transition_crawl_queued_to_started(crawl, now=now)
    tick_a, tick_b = Crawl.objects.get(pk=crawl.pk), Crawl.objects.get(pk=crawl.pk)
    sideeffects_huey.storage.flush_queue()

    assert transition_crawl_advance_step(tick_a, now=now, step=2)
    assert not transition_crawl_advance_step(tick_b, now=now, step=2)
    assert not transition_crawl_advance_step(tick_b, now=now, step=3)

    assert Crawl.objects.get(pk=crawl.pk).current_step == 2
    assert tick_b.current_step == 0
    assert enqueued() == [("sideeffect.wake_step", ("Crawl", crawl.pk, 2))]


def test_expect_guards_a_snapshot_step():
    now = timezone.now()
    crawl = make_crawl(now)
    snapshot = Snapshot.objects.create(crawl=crawl, url="https://example.com", status="started", retry_at=now, current_step=1)
    a, b = Snapshot.objects.get(pk=snapshot.pk), Snapshot.objects.get(pk=snapshot.pk)

    assert transition_snapshot_advance_step(a, now=now, step=4)
    assert not transition_snapshot_advance_step(b, now=now, step=4)
    assert Snapshot.objects.values_list("current_step", flat=True).get(pk=snapshot.pk) == 4
    assert not move(a, "started", "started", now=now, retry_at=now, expect={"current_step": 1}, fields={"current_step": 5})
    assert Snapshot.objects.values_list("current_step", flat=True).get(pk=snapshot.pk) == 4


def test_side_effects_are_not_enqueued_when_the_transaction_rolls_back():
    now = timezone.now()
    crawl = make_crawl(now)

    with pytest.raises(RuntimeError, match="abort"):
        with transaction.atomic():
            assert transition_crawl_queued_to_started(crawl, now=now)
            assert Crawl.objects.get(pk=crawl.pk).status == "started"
            assert sideeffects_huey.storage.queue_size() == 0
            raise RuntimeError("abort")

    assert Crawl.objects.get(pk=crawl.pk).status == "queued"
    assert sideeffects_huey.storage.queue_size() == 0
    assert sideeffects_huey.pending() == []


def test_side_effects_are_enqueued_once_after_commit():
    now = timezone.now()
    crawl = make_crawl(now)

    with transaction.atomic():
        assert transition_crawl_queued_to_started(crawl, now=now)
        assert sideeffects_huey.storage.queue_size() == 0

    assert sideeffects_huey.storage.queue_size() == 1
    assert enqueued() == [("sideeffect.crawl_started", (crawl.pk,))]


def test_each_transition_enqueues_its_own_side_effect():
    now = timezone.now()
    crawl = make_crawl(now)
    assert transition_crawl_queued_to_started(crawl, now=now)
    assert transition_crawl_started_to_sealed(crawl, now=now)
    assert Crawl.objects.filter(pk=crawl.pk).values_list("status", "retry_at", "finished_at").get() == ("sealed", None, now)
    assert enqueued() == [("sideeffect.crawl_started", (crawl.pk,)), ("sideeffect.crawl_finished", (crawl.pk,))]
