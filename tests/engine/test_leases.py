"""Leases: the orchestrator role and the per-actor concurrency slots, all expiring by themselves."""

from __future__ import annotations

import datetime as dt
import threading

from django.db import connection

from archivebox.core.models import Lease
from archivebox.core import leases

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
TTL = 5.0


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def lease(key: str) -> Lease:
    return Lease.objects.get(key=key)


# Named leases ------------------------------------------------------------------------

def test_acquire_creates_the_lease_and_the_same_holder_renews_it():
    assert leases.holder_of("role", T0) is None
    assert leases.acquire("role", "a", T0, TTL, machine_id=None)
    assert lease("role").holder == "a" and lease("role").expires_at == at(TTL)

    assert leases.acquire("role", "a", at(3), TTL)
    assert lease("role").expires_at == at(3 + TTL)
    assert leases.holder_of("role", at(3)).holder == "a"


def test_another_holder_is_refused_until_the_lease_expires():
    assert leases.acquire("role", "a", T0, TTL)

    assert not leases.acquire("role", "b", at(1), TTL)
    assert not leases.acquire("role", "b", at(TTL), TTL)  # expires_at itself still belongs to a
    assert lease("role").holder == "a" and lease("role").expires_at == at(TTL)

    taken_at = at(TTL) + dt.timedelta(microseconds=1)
    assert leases.acquire("role", "b", taken_at, TTL)
    assert leases.holder_of("role", taken_at).holder == "b"
    # The old holder, back from a pause, cannot renew what it lost.
    assert not leases.acquire("role", "a", taken_at, TTL)
    assert lease("role").holder == "b"


def test_holder_of_ignores_an_expired_lease():
    assert leases.acquire("role", "a", T0, TTL)
    assert leases.holder_of("role", at(TTL)).holder == "a"
    assert leases.holder_of("role", at(TTL + 1)) is None


def test_release_only_by_the_holder():
    assert leases.acquire("role", "a", T0, TTL)
    assert not leases.release("role", "b")
    assert leases.holder_of("role", at(1)).holder == "a"

    assert leases.release("role", "a")
    assert leases.holder_of("role", at(1)) is None
    assert not leases.release("role", "a")
    assert leases.acquire("role", "b", at(1), TTL)


def test_leases_are_independent_per_key():
    assert leases.acquire("one", "a", T0, TTL)
    assert leases.acquire("two", "b", T0, TTL)
    assert not leases.acquire("one", "b", at(1), TTL)
    assert not leases.acquire("two", "a", at(1), TTL)


def test_racing_acquires_of_a_new_lease_have_one_winner():
    """Both contenders may find no row and create it: still only one holds the lease."""
    keys = [f"race-{i}" for i in range(30)]
    barrier = threading.Barrier(2)
    won = {"a": [], "b": []}
    errors = []

    def contender(holder):
        try:
            for key in keys:
                barrier.wait(timeout=30)
                won[holder].append(leases.acquire(key, holder, T0, TTL))
        except BaseException as err:
            errors.append(err)
            barrier.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=contender, args=(h,)) for h in won]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert [a + b for a, b in zip(won["a"], won["b"])] == [1] * len(keys)
    for key, a_won in zip(keys, won["a"]):
        assert lease(key).holder == ("a" if a_won else "b")


# Concurrency slots -------------------------------------------------------------------

def test_slots_start_free():
    assert leases.free_slots("Actor", 3, T0) == ["slot:Actor:0", "slot:Actor:1", "slot:Actor:2"]
    assert Lease.objects.filter(actor="Actor").count() == 3
    assert leases.slot_states("Actor", 3, T0) == (["slot:Actor:0", "slot:Actor:1", "slot:Actor:2"], 0)


def test_take_slot_on_a_free_slot_and_refuse_a_busy_one():
    key = leases.slot_key("Actor", 0)
    leases.free_slots("Actor", 2, T0)

    assert leases.take_slot(key, "h1", T0, TTL)
    assert leases.free_slots("Actor", 2, at(1)) == ["slot:Actor:1"]
    assert leases.slot_states("Actor", 2, at(1)) == (["slot:Actor:1"], 1)

    assert not leases.take_slot(key, "h2", at(1), TTL)
    assert (lease(key).holder, lease(key).expires_at) == ("h1", at(TTL))


def test_an_expired_slot_is_free_again_by_itself():
    """A SIGKILLed worker never releases its slot: expiry gives it back."""
    key = leases.slot_key("Actor", 0)
    leases.free_slots("Actor", 1, T0)
    assert leases.take_slot(key, "killed-worker", T0, TTL)

    assert leases.free_slots("Actor", 1, at(TTL)) == []
    assert leases.free_slots("Actor", 1, at(TTL + 1)) == [key]

    assert leases.take_slot(key, "h2", at(TTL + 1), TTL)
    assert lease(key).holder == "h2"
    # The dead holder can neither renew nor release what is no longer its own.
    assert not leases.renew_slot(key, "killed-worker", at(TTL + 2), TTL)
    assert not leases.release_slot(key, "killed-worker")
    assert lease(key).holder == "h2"


def test_renew_slot_only_by_its_holder():
    key = leases.slot_key("Actor", 0)
    leases.free_slots("Actor", 1, T0)
    assert leases.take_slot(key, "h1", T0, TTL)

    assert not leases.renew_slot(key, "h2", at(1), TTL)
    assert lease(key).expires_at == at(TTL)
    assert leases.renew_slot(key, "h1", at(1), TTL)
    assert (lease(key).holder, lease(key).expires_at) == ("h1", at(1 + TTL))


def test_release_slot_only_by_its_holder():
    key = leases.slot_key("Actor", 0)
    leases.free_slots("Actor", 1, T0)
    assert leases.take_slot(key, "h1", T0, TTL)

    assert not leases.release_slot(key, "h2")
    assert leases.free_slots("Actor", 1, at(1)) == []
    assert leases.release_slot(key, "h1")
    assert leases.free_slots("Actor", 1, at(1)) == [key]
    assert (lease(key).holder, lease(key).expires_at) == ("", None)


def test_raising_the_limit_adds_slots_and_keeps_the_busy_ones():
    leases.free_slots("Actor", 1, T0)
    assert leases.take_slot(leases.slot_key("Actor", 0), "h", T0, TTL)
    assert leases.free_slots("Actor", 3, at(1)) == ["slot:Actor:1", "slot:Actor:2"]


def test_slots_of_different_actors_do_not_interfere():
    leases.free_slots("A", 1, T0)
    leases.free_slots("B", 1, T0)
    assert leases.take_slot(leases.slot_key("A", 0), "h", T0, TTL)
    assert leases.free_slots("B", 1, at(1)) == ["slot:B:0"]
