"""Fixtures for the built-in plugin tests: the local web site and snapshot folders.

The helpers live in ``plugintools`` (a module name of its own: several test
directories have a ``conftest``, so ``from conftest import`` is ambiguous).
"""
import pytest

from plugintools import Snapshot, localsite


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The generated test site served on 127.0.0.1 for the whole session."""
    root = tmp_path_factory.mktemp("site")
    with localsite.local_site(str(root), pages=20) as running:
        yield running


@pytest.fixture
def snapshot_factory(tmp_path):
    counter = {"n": 0}

    def make(url):
        counter["n"] += 1
        return Snapshot(tmp_path / "data", url, snapshot_id=f"snap-{counter['n']:04d}")

    return make
