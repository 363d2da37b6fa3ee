"""Side effects named as data.

A transition (or a tick that finds an earlier request lost) says which side effect must
follow it as an :class:`Effect`: a name and its arguments. It never imports the
side-effect layer, which sits above it. Django's app start-up connects the one sender
(:mod:`archivebox.apps`), which puts each request on the side-effects queue after the
transaction that asked for it commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Sender = Callable[[str, tuple], None]
_sender: list[Sender] = []


class NotConnected(RuntimeError):
    """No sender is connected: Django was not set up through ``archivebox.boot.setup()``."""


@dataclass(frozen=True)
class Effect:
    """One side-effect call: ``name`` (a function in :mod:`archivebox.sideeffects`) and its arguments."""

    name: str
    args: tuple = ()

    def __call__(self) -> None:
        request(self)

    def __str__(self) -> str:
        return f"{self.name}{self.args}"


def connect(sender: Sender) -> None:
    """Make ``sender(name, args)`` the one way effects are requested (called once at start-up)."""
    _sender[:] = [sender]


def request(effect: Effect) -> None:
    """Ask for ``effect`` now (callers on a transaction pass it to ``on_commit`` instead)."""
    if not _sender:
        raise NotConnected(f"cannot request {effect}: side effects are not connected (set Django up with archivebox.boot.setup())")
    _sender[0](effect.name, effect.args)
