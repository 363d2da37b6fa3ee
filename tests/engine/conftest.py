"""Fixtures of the engine tests."""

from __future__ import annotations

import uuid

import pytest

from archivebox.core.models import Crawl
from archivebox.tasks.registry import ACTOR_TYPES, ActorType, Go, register
from archivebox.transitions.crawl import transition_crawl_give_up, transition_crawl_queued_to_started, transition_crawl_started_to_sealed


def seal_quickly(crawl, *, now, config):
    """queued -> started (due again at once) -> sealed."""
    if crawl.status == "queued":
        return Go(transition_crawl_queued_to_started, {"check_at": now})
    return Go(transition_crawl_started_to_sealed)


@pytest.fixture
def make_actor():
    """Register throw-away actor types over Crawl rows with the test's own handler."""
    names = []

    def make(handler=seal_quickly, statuses=("queued", "started")):
        name = f"TestCrawl{uuid.uuid4().hex[:8]}"
        names.append(name)
        return register(ActorType(name, Crawl, handler, transition_crawl_give_up, tuple(statuses)))

    yield make
    for name in names:
        ACTOR_TYPES.pop(name, None)
