"""The orchestrator: one leader per collection, due rows into free slots, orphans reported."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from archivebox.config import EngineConfig
from archivebox.core.models import Crawl, Snapshot
from archivebox.core import leases
from archivebox.tasks import orchestrator as orchestrator_module
from archivebox.tasks.orchestrator import BUSY_PAUSE, MIN_PAUSE, Orchestrator
from archivebox.tasks.queue import huey as ticks_huey
from archivebox.tasks.registry import ACTOR_TYPES
from archivebox.tasks.ticks import run_ticks
from helpers import wait_until

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)








def config(concurrency: dict, **overrides) -> EngineConfig:
    values = dict(data_dir=settings.DATA_DIR, max_tick_time=10.0, orchestrator_lease_ttl=6.0, orchestrator_idle_poll=1.0,
                  orphan_check_interval=10.0, concurrency=concurrency)
    values.update(overrides)
    return EngineConfig(**values)


def make_crawls(*retry_ats: dt.datetime, status: str = "queued") -> list[Crawl]:
    return [Crawl.objects.create(urls=f"https://example.com/{i}", retry_at=when, status=status) for i, when in enumerate(retry_ats)]


def dispatched() -> list[tuple]:
    return [task.args for task in ticks_huey.pending()]


def orphan_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "claimed by no actor type" in r.getMessage()]


# Dispatch ----------------------------------------------------------------------------

def test_dispatches_the_earliest_due_rows_up_to_the_concurrency_limit(make_actor):
    actor = make_actor()
    cfg = config({actor.name: 2}, tick_batch=1)
    crawls = make_crawls(at(-1), at(-5), at(-3), at(-4), at(60))
    orchestrator = Orchestrator(cfg, [actor])

    assert orchestrator.run_single_cycle(now=T0) == BUSY_PAUSE

    by_age = sorted(crawls[:4], key=lambda c: c.retry_at)
    token = at(cfg.slot_ttl)
    assert [(name, pks, tok, slot) for name, pks, tok, slot, _ in dispatched()] == [
        (actor.name, [c.pk], token, leases.slot_key(actor.name, i)) for i, c in enumerate(by_age[:2])]
    # The dispatched rows are claimed (their retry_at is the batch token); the others are still due.
    assert set(Crawl.objects.filter(retry_at=token).values_list("pk", flat=True)) == {c.pk for c in by_age[:2]}
    assert leases.slot_states(actor.name, 1, T0)[1] == 2


def test_a_batch_takes_up_to_tick_batch_rows(make_actor):
    actor = make_actor()
    cfg = config({actor.name: 2}, tick_batch=3)
    crawls = make_crawls(*(at(-i) for i in range(1, 8)))
    Orchestrator(cfg, [actor]).run_single_cycle(now=T0)
    batches = [pks for _, pks, _, _, _ in dispatched()]
    assert [len(b) for b in batches] == [3, 3]
    by_age = [c.pk for c in sorted(crawls, key=lambda c: c.retry_at)]
    assert sorted(batches[0] + batches[1]) == sorted(by_age[:6])


def test_a_row_is_not_dispatched_twice_while_its_batch_lives(make_actor):
    actor = make_actor()
    cfg = config({actor.name: 3})
    crawls = make_crawls(at(-2), at(-1))
    orchestrator = Orchestrator(cfg, [actor])

    orchestrator.run_single_cycle(now=T0)
    orchestrator.run_single_cycle(now=at(1))
    orchestrator.run_single_cycle(now=at(cfg.slot_ttl - 0.001))

    assert [sorted(pks) for _, pks, _, _, _ in dispatched()] == [sorted(c.pk for c in crawls)]
    assert leases.free_slots(actor.name, 3, at(1)) == [leases.slot_key(actor.name, 1), leases.slot_key(actor.name, 2)]


def test_a_lost_dispatch_is_dispatched_again_after_its_claim_expires(make_actor):
    """A tick message lost with its consumer costs one slot TTL, never the row."""
    actor = make_actor()
    cfg = config({actor.name: 1})
    (crawl,) = make_crawls(at(-1))
    orchestrator = Orchestrator(cfg, [actor])

    orchestrator.run_single_cycle(now=T0)
    ticks_huey.storage.flush_queue()  # the consumer holding the message was SIGKILLed
    orchestrator.run_single_cycle(now=at(cfg.slot_ttl - 0.001))
    assert dispatched() == []

    orchestrator.run_single_cycle(now=at(cfg.slot_ttl + 0.001))
    [(name, pks, token, slot, _)] = dispatched()
    assert (name, pks, token, slot) == (actor.name, [crawl.pk], at(2 * cfg.slot_ttl + 0.001), leases.slot_key(actor.name, 0))


def test_a_late_copy_of_a_lost_message_finds_its_claims_gone(make_actor):
    actor = make_actor()
    cfg = config({actor.name: 1})
    (crawl,) = make_crawls(at(-1))
    orchestrator = Orchestrator(cfg, [actor])
    orchestrator.run_single_cycle(now=T0)
    [(_, pks, first_token, _, _)] = dispatched()
    ticks_huey.storage.flush_queue()
    orchestrator.run_single_cycle(now=at(cfg.slot_ttl + 0.001))  # dispatched again under a new token
    assert Crawl.objects.get(pk=crawl.pk).retry_at == at(2 * cfg.slot_ttl + 0.001)

    assert run_ticks(actor, pks, first_token, cfg, now=at(cfg.slot_ttl + 1))[0].outcome == "lost"
    assert Crawl.objects.get(pk=crawl.pk).status == "queued"


def test_actor_types_are_dispatched_independently(make_actor):
    a, b = make_actor(statuses=("queued",)), make_actor(statuses=("started",))
    cfg = config({a.name: 1, b.name: 1}, tick_batch=1)
    queued = make_crawls(at(-2), at(-1))
    started = make_crawls(at(-2), at(-1), status="started")
    Orchestrator(cfg, [a, b]).run_single_cycle(now=T0)
    assert sorted((args[0], args[1][0]) for args in dispatched()) == sorted([(a.name, queued[0].pk), (b.name, started[0].pk)])


def test_concurrency_zero_dispatches_nothing(make_actor):
    actor = make_actor()
    make_crawls(at(-1))
    Orchestrator(config({actor.name: 0}), [actor]).run_single_cycle(now=T0)
    assert dispatched() == []


def test_driving_the_loop_finishes_every_row_within_the_limit(make_actor):
    """Orchestrator passes plus the dispatched batches, run here one by one, seal every crawl."""
    actor = make_actor()
    cfg = config({actor.name: 2}, tick_batch=2)
    now = timezone.now()
    crawls = make_crawls(*(now - dt.timedelta(seconds=i) for i in range(5)))
    orchestrator = Orchestrator(cfg, [actor])
    ticks_run, most_busy = 0, 0

    for _ in range(40):
        orchestrator.run_single_cycle()
        while ticks_huey.storage.queue_size():
            most_busy = max(most_busy, leases.slot_states(actor.name, 1, timezone.now())[1])
            name, pks, token, slot, holder = ticks_huey.dequeue().args
            ticks_run += len(run_ticks(ACTOR_TYPES[name], pks, token, cfg, slot=slot, holder=holder))
        if not Crawl.objects.filter(retry_at__isnull=False).exists():
            break

    assert set(Crawl.objects.values_list("status", flat=True)) == {"sealed"}
    assert most_busy == 2
    assert ticks_run >= 2 * len(crawls)
    assert leases.slot_states(actor.name, 1, timezone.now())[1] == 0


# The orchestrator lease --------------------------------------------------------------

def test_only_one_orchestrator_leads_and_the_other_takes_over_after_expiry(make_actor):
    actor = make_actor()
    cfg = config({actor.name: 10})
    first, second = Orchestrator(cfg, [actor]), Orchestrator(cfg, [actor])
    ttl = cfg.orchestrator_lease_ttl

    first.run_single_cycle(now=T0)
    assert first.leading
    make_crawls(at(0.5))
    assert second.run_single_cycle(now=at(1)) == ttl / 3
    assert not second.leading
    assert dispatched() == []

    first.run_single_cycle(now=at(2))  # renews and dispatches
    assert len(dispatched()) == 1
    (late,) = make_crawls(at(2.5))
    # The first orchestrator dies here. Until its lease expires nobody scans.
    second.run_single_cycle(now=at(2 + ttl))
    assert not second.leading and len(dispatched()) == 1

    second.run_single_cycle(now=at(2 + ttl + 0.001))
    assert second.leading
    assert leases.holder_of(leases.ORCHESTRATOR, at(3 + ttl)).holder == second.token
    assert dispatched()[-1][1] == [late.pk]

    # The first one comes back from its pause: it has lost the lease and steps down.
    assert first.run_single_cycle(now=at(3 + ttl)) == ttl / 3
    assert not first.leading
    assert len(dispatched()) == 2


def test_the_lease_is_released_when_the_loop_stops(make_actor):
    actor = make_actor()
    cfg = config({actor.name: 1}, orchestrator_idle_poll=0.05)
    orchestrator = Orchestrator(cfg, [actor])
    stop = threading.Event()

    def run():
        try:
            orchestrator.run(stop)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_until(lambda: orchestrator.leading, timeout=10, interval=0.01, message="the loop to take the lease")
        assert leases.holder_of(leases.ORCHESTRATOR, timezone.now()).holder == orchestrator.token
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    assert not orchestrator.leading
    assert leases.holder_of(leases.ORCHESTRATOR, timezone.now()) is None


# Orphans -----------------------------------------------------------------------------

def test_rows_of_an_actor_type_with_concurrency_zero_are_orphans(make_actor, engine_logs):
    actor = make_actor()
    (crawl,) = make_crawls(at(-1))
    orchestrator = Orchestrator(config({actor.name: 0}), [actor])

    orchestrator.run_single_cycle(now=T0)

    warnings = orphan_warnings(engine_logs)
    assert len(warnings) == 1
    assert warnings[0].startswith("1 due Crawl rows") and str(crawl.pk) in warnings[0]


def test_rows_in_a_status_no_actor_covers_are_orphans(make_actor, engine_logs):
    actor = make_actor(statuses=("queued",))
    (covered,) = make_crawls(at(-1))
    (stranded,) = make_crawls(at(-1), status="started")
    make_crawls(at(60), status="started")  # not due yet
    make_crawls(None, status="sealed")  # finished
    orchestrator = Orchestrator(config({actor.name: 1}), [actor])

    assert orchestrator.check_orphans(T0) == 1
    warnings = orphan_warnings(engine_logs)
    assert len(warnings) == 1 and str(stranded.pk) in warnings[0] and str(covered.pk) not in warnings[0]


def test_due_rows_of_a_model_no_actor_ticks_are_orphans(make_actor, engine_logs):
    actor = make_actor()
    (crawl,) = make_crawls(at(-1))
    snapshot = Snapshot.objects.create(crawl=crawl, url="https://example.com", retry_at=at(-1))
    orchestrator = Orchestrator(config({actor.name: 1}), [actor])

    assert orchestrator.check_orphans(T0) == 1
    assert [w for w in orphan_warnings(engine_logs) if "Snapshot" in w and str(snapshot.pk) in w]


def test_no_orphan_warning_when_every_due_row_is_covered(make_actor, engine_logs):
    actor = make_actor()
    make_crawls(at(-1), at(-2), status="started")
    assert Orchestrator(config({actor.name: 1}), [actor]).check_orphans(T0) == 0
    assert orphan_warnings(engine_logs) == []


def test_the_orphan_check_runs_once_per_interval(make_actor):
    actor = make_actor()
    make_crawls(at(-1))
    orchestrator = Orchestrator(config({actor.name: 0}, orphan_check_interval=10), [actor])
    assert orchestrator.check_orphans(T0) == 1
    assert orchestrator.check_orphans(at(9)) == 0
    assert orchestrator.check_orphans(at(10)) == 1


# Sleeping ----------------------------------------------------------------------------

class PassClock:
    """A monotonic clock for one pass: its first reading is the start, every later one
    ``pass_length`` seconds on."""

    def __init__(self, pass_length: float):
        self.pass_length, self.readings = pass_length, 0

    def __call__(self) -> float:
        self.readings += 1
        return 1000.0 + (self.pass_length if self.readings > 1 else 0.0)


@pytest.mark.parametrize("due_in, expected", [(4.0, 4.0), (0.0001, MIN_PAUSE), (100.0, 10.0), (None, 10.0)])
def test_sleep_until_the_next_due_row_capped(make_actor, monkeypatch, due_in, expected):
    actor = make_actor()
    cfg = config({actor.name: 1}, orchestrator_idle_poll=10.0, orchestrator_lease_ttl=60.0)
    if due_in is not None:
        make_crawls(at(due_in))
    monkeypatch.setattr(orchestrator_module, "time", SimpleNamespace(monotonic=PassClock(0.0)))  # this module's clock only
    assert Orchestrator(cfg, [actor]).run_single_cycle(now=T0) == pytest.approx(expected)


def test_the_sleep_is_measured_from_the_end_of_the_pass(make_actor, monkeypatch):
    """A pass that took 1.5 s wakes for a row due 4 s after it started 2.5 s after it ends."""
    actor = make_actor()
    cfg = config({actor.name: 1}, orchestrator_idle_poll=10.0, orchestrator_lease_ttl=60.0)
    make_crawls(at(4.0))
    monkeypatch.setattr(orchestrator_module, "time", SimpleNamespace(monotonic=PassClock(1.5)))  # this module's clock only
    assert Orchestrator(cfg, [actor]).run_single_cycle(now=T0) == pytest.approx(2.5)


def test_the_sleep_is_capped_by_a_third_of_the_lease_ttl(make_actor):
    actor = make_actor()
    cfg = config({actor.name: 1}, orchestrator_idle_poll=10.0, orchestrator_lease_ttl=6.0)
    make_crawls(at(5))
    assert Orchestrator(cfg, [actor]).run_single_cycle(now=T0) == pytest.approx(2.0)


def test_next_due_is_the_earliest_future_row_the_actors_tick(make_actor):
    actor = make_actor(statuses=("queued",))
    cfg = config({actor.name: 1})
    make_crawls(at(-1), at(30), at(20))
    make_crawls(at(5), status="started")  # not this actor's status
    (crawl,) = make_crawls(at(40))
    Snapshot.objects.create(crawl=crawl, url="https://example.com", retry_at=at(3))  # not this actor's model
    orchestrator = Orchestrator(cfg, [actor])
    assert orchestrator.next_due(T0) == at(20)
    assert orchestrator.next_due(at(35)) == at(40)
    assert orchestrator.next_due(at(40)) is None
