"""Side effects as types.

A transition (or a tick that finds an earlier request lost) says which side effect must
follow it by making an instance of one of the classes below: one frozen dataclass per
side effect, with its typed arguments. It never imports the side-effect layer, which sits
above it: :mod:`archivebox.sideeffects.queue` registers the function that carries out each
class, and Django's app start-up (:mod:`archivebox.apps`) checks that every class has one
and connects the sender, which puts each request on the side-effects queue after the
transaction that asked for it commits. A misspelt side effect fails at import; one
without a function fails at start-up.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

OwnerKind = Literal["Crawl", "Snapshot"]


class NotConnected(RuntimeError):
    """No sender is connected: Django was not set up through ``archivebox.boot.setup()``."""


@dataclass(frozen=True)
class Effect:
    """One side-effect request; its class says which side effect, its fields its arguments.

    Calling it requests it now (a transition passes it to ``on_commit`` instead). Side
    effects are idempotent for their key (class and arguments): a request made twice
    changes nothing the second time."""

    def __call__(self) -> None:
        SENDER.send(self)

    @property
    def args(self) -> tuple:
        """The arguments, in field order (how the queue carries them)."""
        return tuple(getattr(self, field.name) for field in dataclasses.fields(self))

    @property
    def key(self) -> str:
        return ":".join([type(self).__name__, *map(str, self.args)])

    def __str__(self) -> str:
        return f"{type(self).__name__}{self.args}"


# Crawls -----------------------------------------------------------------------------

@dataclass(frozen=True)
class CrawlStarted(Effect):
    """Create the crawl's own hook results and let it look."""

    crawl_id: uuid.UUID


@dataclass(frozen=True)
class CreateRootSnapshots(Effect):
    """Create the snapshots of the crawl's seed URLs."""

    crawl_id: uuid.UUID


@dataclass(frozen=True)
class ActivateSnapshots(Effect):
    """Let the crawl's parked snapshots in, as far as there is room."""

    crawl_id: uuid.UUID


@dataclass(frozen=True)
class CrawlFinished(Effect):
    """The crawl is sealed or failed: cancel what is left of it."""

    crawl_id: uuid.UUID


@dataclass(frozen=True)
class FetchRobots(Effect):
    """Read ``origin``'s robots.txt for the crawl (ROBOTS_TXT), once per host per crawl."""

    crawl_id: uuid.UUID
    host: str
    origin: str


# Snapshots --------------------------------------------------------------------------

@dataclass(frozen=True)
class SnapshotStarted(Effect):
    """Create the snapshot's hook results (its first step due now)."""

    snapshot_id: uuid.UUID


@dataclass(frozen=True)
class SnapshotFinished(Effect):
    """The snapshot is sealed or failed: its final index, the next parked snapshot in."""

    snapshot_id: uuid.UUID


# Hook results -----------------------------------------------------------------------

@dataclass(frozen=True)
class WakeStep(Effect):
    """Make the owner's queued results of ``step`` (and earlier) due."""

    owner_kind: OwnerKind
    owner_id: uuid.UUID
    step: int


@dataclass(frozen=True)
class StopBackground(Effect):
    """Ask the owner's running background hooks of ``plugins`` to stop (cleanup);
    ``before``: only those ordered before that hook (``wait_for_background_cleanup``)."""

    owner_kind: OwnerKind
    owner_id: uuid.UUID
    before: str = ""
    plugins: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunHook(Effect):
    """Run attempt ``attempt`` of the result's hook."""

    result_id: uuid.UUID
    attempt: int


@dataclass(frozen=True)
class ResultFinished(Effect):
    """A result is final: wake what waits for it, its owner, its index."""

    result_id: uuid.UUID


# Processes --------------------------------------------------------------------------

@dataclass(frozen=True)
class WakeProcessOwner(Effect):
    """A Process row ended: wake the row that waits for it."""

    process_id: uuid.UUID


def effect_classes() -> list[type[Effect]]:
    """Every side effect the engine declares."""
    return list(Effect.__subclasses__())


class _Sender:
    """The one way effects are requested, connected once at start-up."""

    def __init__(self) -> None:
        self.send_to: Callable[[Effect], None] | None = None

    def send(self, effect: Effect) -> None:
        if self.send_to is None:
            raise NotConnected(f"cannot request {effect}: side effects are not connected (set Django up with archivebox.boot.setup())")
        self.send_to(effect)


SENDER = _Sender()


def connect(send: Callable[[Effect], None]) -> None:
    """Make ``send(effect)`` the one way effects are requested (called once at start-up)."""
    SENDER.send_to = send


def request(effect: Effect) -> None:
    """Ask for ``effect`` now (callers on a transaction pass it to ``on_commit`` instead)."""
    SENDER.send(effect)
