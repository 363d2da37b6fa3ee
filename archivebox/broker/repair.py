"""A queue file that is no longer a database is moved aside and made again.

A SQLite queue holds only hints (the rows in the index are the truth, and the orchestrator
dispatches every due row again), so a queue file that is corrupted (overwritten, truncated,
a bad disk block) loses nothing worth keeping: it is renamed to
``<name>.sqlite3.corrupt-<unix time>`` for a person to look at, and an empty one takes its
place. Every process that uses the file may notice at once: a lock beside the file makes
one of them do it, and each checks the file at the path again before moving it.
"""

from __future__ import annotations

import fcntl
import logging
import sqlite3
import time
from pathlib import Path

logger = logging.getLogger(__name__)

CORRUPTION = ("file is not a database", "database disk image is malformed", "file is encrypted or is not a database")
SUFFIX = ".corrupt-"


def is_corruption(err: BaseException) -> bool:
    return isinstance(err, sqlite3.DatabaseError) and any(text in str(err).lower() for text in CORRUPTION)


def check(path: Path) -> str | None:
    """Why the SQLite file at ``path`` is not a usable database (None: it is, or is absent)."""
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            conn.execute("select count(*) from sqlite_master").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        return str(err) if is_corruption(err) else None
    return None


def quarantine(path: Path, now: float | None = None) -> Path | None:
    """Move a corrupted queue file (and its WAL and shared-memory files) aside; returns where
    it went, or None if the file at ``path`` is fine (another process repaired it first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".repair-lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        reason = check(path)
        if reason is None:
            return None
        aside = path.with_name(f"{path.name}{SUFFIX}{int(now if now is not None else time.time())}")
        for suffix in ("-wal", "-shm"):
            companion = path.with_name(path.name + suffix)
            if companion.exists():
                companion.rename(aside.with_name(aside.name + suffix))
        path.rename(aside)
        logger.error("queue file %s is corrupted (%s): moved it aside to %s and started an empty one "
                     "(it held only hints: the index is the truth)", path, reason, aside.name)
        return aside


def quarantined(queue_dir: Path) -> list[Path]:
    """Queue files moved aside so far, oldest first."""
    return sorted(queue_dir.glob(f"*.sqlite3{SUFFIX}[0-9]*"), key=lambda p: p.name.rsplit("-", 1)[-1]) if queue_dir.is_dir() else []
