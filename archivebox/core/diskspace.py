"""A full disk: said once, in one line, and waited out.

When the collection's disk fills up, every write fails: the index's, the logs', the
hooks'. Nothing is lost by waiting (the rows that were due stay due, a hook's outcome that
could not be recorded is recorded by the sweep from its status file later), so the engine
does not treat it as a failure of the work at hand: the loops that meet it say
``disk full: <path>`` at most once a minute per process, skip their traceback, and carry on
retrying. :func:`full_since` lets a foreground command stop waiting and say so.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time

logger = logging.getLogger(__name__)

REPEAT_EVERY = 60.0
_MARKERS = ("database or disk is full", "no space left on device", "disk quota exceeded")

_lock = threading.Lock()
_state = {"since": None, "said": 0.0}


def is_disk_full(err: BaseException) -> bool:
    """Is ``err`` (or what caused it) a full disk? An OSError with ENOSPC/EDQUOT, or a
    database error saying so."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(marker in str(err).lower() for marker in _MARKERS):
            return True
        err = err.__cause__ or err.__context__
    return False


# Below this much free space, a failing write is taken for the disk being full.
LOW_SPACE = 256 * 1024


def out_of_space(path, stderr_path=None) -> bool:
    """Did a process that failed at ``path`` run out of disk? Its stderr says so (the last few
    KB of ``stderr_path``), or the disk there has next to nothing left."""
    if stderr_path:
        try:
            with open(stderr_path, "rb") as err:
                err.seek(0, 2)
                err.seek(max(err.tell() - 4096, 0))
                if b"No space left on device" in err.read():
                    return True
        except OSError:
            pass  # no readable stderr: the free space below decides
    try:
        stats = os.statvfs(path)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < LOW_SPACE


def report(where: str, path, now: float | None = None) -> None:
    """Note that the disk holding ``path`` is full (met by ``where``); log it at most once a minute."""
    now = time.monotonic() if now is None else now
    with _lock:
        if _state["since"] is None:
            _state["since"] = now
        if now - _state["said"] < REPEAT_EVERY:
            return
        _state["said"] = now
    logger.error("disk full: %s (%s could not write; the work stays queued and goes on once there is space)", path, where)


def recovered() -> None:
    """A write went through again."""
    with _lock:
        if _state["since"] is None:
            return
        _state["since"] = None
        _state["said"] = 0.0
    logger.warning("disk space is back: the work goes on")


def full_since() -> float | None:
    """When (monotonic) this process first met the full disk, if it has not had a write go through since."""
    return _state["since"]
