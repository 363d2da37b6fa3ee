"""Transitions of an ArchiveResult: queued -> started -> succeeded | failed | skipped | noresults.

``started -> queued`` is a retry after a transient failure: the row waits out its
backoff in ``queued`` and runs again with ``attempts + 1``.
"""

from __future__ import annotations

import datetime as dt

from archivebox.core.models import ArchiveResult
from archivebox.core.graphs import ArchiveResultGraph
from archivebox.transitions.cas import move
from archivebox.transitions.effects import ResultFinished, RunHook


def transition_archiveresult_queued_to_started(result: ArchiveResult, *, now: dt.datetime, check_at: dt.datetime, claim=None) -> bool:
    """Launch the next attempt; look again at ``check_at`` in case the launch request is lost."""
    attempt = result.attempts + 1
    return move(result, ArchiveResultGraph.queued, ArchiveResultGraph.started, now=now, claim=claim, retry_at=check_at,
                fields={"attempts": attempt, "started_at": now, "finished_at": None, "ready_at": None, "stop_requested_at": None},
                then=[RunHook(result.pk, attempt)])


def transition_archiveresult_queued_to_skipped(result: ArchiveResult, *, now: dt.datetime, reason: str, claim=None) -> bool:
    return move(result, ArchiveResultGraph.queued, ArchiveResultGraph.skipped, now=now, claim=claim, fields={"output_str": reason, "finished_at": now},
                then=[ResultFinished(result.pk)])


def _finish(result: ArchiveResult, target: str, now: dt.datetime, output_str: str, output_json, claim) -> bool:
    return move(result, ArchiveResultGraph.started, target, now=now, claim=claim,
                fields={"output_str": output_str, "output_json": output_json, "finished_at": now},
                then=[ResultFinished(result.pk)])


def transition_archiveresult_started_to_succeeded(result: ArchiveResult, *, now: dt.datetime, output_str: str = "", output_json=None, claim=None) -> bool:
    return _finish(result, ArchiveResultGraph.succeeded, now, output_str, output_json, claim)


def transition_archiveresult_started_to_failed(result: ArchiveResult, *, now: dt.datetime, output_str: str = "", output_json=None, claim=None) -> bool:
    return _finish(result, ArchiveResultGraph.failed, now, output_str, output_json, claim)


def transition_archiveresult_started_to_skipped(result: ArchiveResult, *, now: dt.datetime, output_str: str = "", output_json=None, claim=None) -> bool:
    return _finish(result, ArchiveResultGraph.skipped, now, output_str, output_json, claim)


def transition_archiveresult_started_to_noresults(result: ArchiveResult, *, now: dt.datetime, output_str: str = "", output_json=None, claim=None) -> bool:
    return _finish(result, ArchiveResultGraph.noresults, now, output_str, output_json, claim)


def transition_archiveresult_started_to_queued(result: ArchiveResult, *, now: dt.datetime, retry_at: dt.datetime, output_str: str = "",
                                               output_json=None, claim=None, attempt_limit: int | None = None) -> bool:
    """A retry: keep what the failed attempt reported, run again at ``retry_at``
    (``attempt_limit``: a new limit, when the attempt that ended must not count)."""
    fields = {"output_str": output_str, "output_json": output_json}
    if attempt_limit is not None:
        fields["attempt_limit"] = attempt_limit
    return move(result, ArchiveResultGraph.started, ArchiveResultGraph.queued, now=now, claim=claim, retry_at=retry_at, fields=fields)


def transition_archiveresult_give_up(result: ArchiveResult, *, now: dt.datetime, error: str, claim=None) -> bool:
    """Any unfinished state -> failed."""
    return move(result, result.status, ArchiveResultGraph.failed, now=now, claim=claim,
                fields={"finished_at": now, "last_error": error[:2000], "output_str": result.output_str or error[:500]},
                then=[ResultFinished(result.pk)])


def transition_archiveresult_reopen(result: ArchiveResult, *, now: dt.datetime, max_attempts: int) -> bool:
    """failed -> queued, by a user's retry: ``max_attempts`` more attempts from now on."""
    return move(result, ArchiveResultGraph.failed, ArchiveResultGraph.queued, now=now, retry_at=now, fields={
        "finished_at": None, "tick_errors": 0, "last_error": "", "attempt_limit": result.attempts + max_attempts,
    })


def transition_archiveresult_rerun(result: ArchiveResult, *, now: dt.datetime, max_attempts: int) -> bool:
    """succeeded | failed | skipped -> queued, by a user's re-extract: run the hook again
    (``max_attempts`` more attempts); its owner's step walk starts it in order."""
    return move(result, sorted(result.graph.finals), ArchiveResultGraph.queued, now=now, retry_at=now, fields={
        "started_at": None, "finished_at": None, "tick_errors": 0, "last_error": "", "attempt_limit": result.attempts + max_attempts,
    })
