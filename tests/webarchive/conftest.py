"""Fixtures of the web archive tests: the replay environment, provisioned once per machine."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

import pytest
from django.conf import settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "web"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "browser"))

from archivebox.core.models import Machine  # noqa: E402
from archivebox.webarchive import replayenv  # noqa: E402

# Not the session's LIB_DIR (removed after each session): pywb installs once per machine.
REPLAY_LIB = Path(tempfile.gettempdir()) / "abx-test-replay-lib"


@pytest.fixture(scope="session")
def replay_python() -> str:
    """The replay environment's python, provisioned by the engine's own code (pip install
    pywb into a virtualenv, the first time on this machine)."""
    config = dataclasses.replace(settings.ENGINE, lib_dir=REPLAY_LIB, replay_python="")
    return str(replayenv.ensure(Machine.current(config.machine_id), config))
