"""The declared lifecycle of every stateful model.

Each graph is the single source of the model's status choices and of the transitions
that :mod:`archivebox.transitions` may write. Self-edges (``started -> started``) are
progress within a state, such as a snapshot advancing to its next hook step.
"""

from archivebox.core.graph import State, StateGraph


class CrawlGraph(StateGraph):
    queued = State(initial=True)
    started = State()
    sealed = State(final=True)
    failed = State(final=True)
    give_up_state = "failed"

    queued.transitions_to(started, failed)
    started.transitions_to(started, sealed, failed)


class SnapshotGraph(StateGraph):
    queued = State(initial=True)
    started = State()
    sealed = State(final=True)
    failed = State(final=True)
    give_up_state = "failed"

    queued.transitions_to(started, failed)
    started.transitions_to(started, sealed, failed)
    # Re-running a snapshot (``archivebox update``, the admin's retry) walks its steps again.
    sealed.reopens_to(queued)
    failed.reopens_to(queued)


class ArchiveResultGraph(StateGraph):
    queued = State(initial=True)
    started = State()
    succeeded = State(final=True)
    failed = State(final=True)
    skipped = State(final=True)
    # The hook ran fine and found nothing to save (no video on the page, no feed in it).
    noresults = State(final=True)
    give_up_state = "failed"

    queued.transitions_to(started, skipped, failed)
    # started -> queued is a retry with backoff after a transient failure.
    started.transitions_to(queued, succeeded, failed, skipped, noresults)
    failed.reopens_to(queued)
    # A user's re-extract runs a finished hook again.
    succeeded.reopens_to(queued)
    skipped.reopens_to(queued)
    noresults.reopens_to(queued)


class ProcessGraph(StateGraph):
    queued = State(initial=True)
    running = State()
    exited = State(final=True)
    give_up_state = "exited"

    queued.transitions_to(running, exited)
    running.transitions_to(exited)
