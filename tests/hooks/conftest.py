"""Fixtures of the hook-runner tests (helpers are in :mod:`util`)."""

from __future__ import annotations

import os

import pytest

from archivebox.process import registry


@pytest.fixture
def use_plugins(monkeypatch):
    """Select the enabled fixture plugins (the PLUGINS allow-list of the environment layer)."""
    def select(plugins: str, **env: str) -> None:
        monkeypatch.setenv("PLUGINS", plugins)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
    return select


@pytest.fixture(autouse=True)
def no_registered_worker():
    """A test that registers the test process as a worker must not leak it to the next test."""
    yield
    registry._current.pop(os.getpid(), None)


