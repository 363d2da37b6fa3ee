"""Start Django for any entry point: the CLI, the Huey consumers and the tests.

Every process that touches the database calls :func:`setup` once. It is cheap to
call again, so entry points need not coordinate.

Everything the engine writes (databases, logs, secrets, the archive, the queue files) is
created readable by its own user only: :func:`setup` sets the process umask to ``077``,
which hooks and every other subprocess inherit.
"""

import os

import django

from archivebox import tuning

SETTINGS_MODULE = "archivebox.settings"
UMASK = 0o077


# Whether Django's start connects the engine's layers (archivebox.apps). Every process
# does, but a command that only reads (`list`, `status`...): it has no work to queue, and
# starts in half the time without importing the queues' side of the engine.
_wire = True


def setup(wire: bool = True) -> None:
    """Configure Django from the environment (see :mod:`archivebox.settings`); ``wire=False``
    for a process that only reads (the engine's layers stay unconnected: a side effect
    requested there raises ``NotConnected``). The process's first call decides."""
    global _wire
    os.umask(UMASK)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS_MODULE)
    _wire = wire  # read once, by the first call's django.setup()
    if wire:
        django.setup()
        return
    with tuning.start_without_collections():  # a kept trick: see archivebox.tuning
        django.setup()


def wiring() -> bool:
    """Should Django's start connect the engine's layers? (read by archivebox.apps)"""
    return _wire
