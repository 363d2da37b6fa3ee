"""Reading files named by URLs or DB rows without ever leaving the folder they belong to.

``archived_file`` maps a URL path to a regular file under ``ARCHIVE_DIR``: it refuses
``..`` segments, absolute paths, NUL bytes and anything whose real path (after
symlinks) is outside the archive. ``tail`` reads the end of a log file named by a
Process row, only if it is a regular file under the data dir, without blocking on
FIFOs and without reading more than asked.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

TAIL_BYTES = 8 * 1024
MAX_LISTED = 5000


class Refused(Exception):
    """The path is not one we serve."""


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def safe_join(root: Path, relative: str) -> Path:
    """``root / relative`` as a real path, refusing anything that escapes ``root``."""
    if "\x00" in relative or "\\" in relative:
        raise Refused("bad character in path")
    parts = relative.split("/")
    if relative.startswith("/") or any(part in ("..", ".") for part in parts):
        raise Refused("path escapes its folder")
    real_root = root.resolve()
    try:
        target = (real_root / "/".join(p for p in parts if p)).resolve(strict=True)
    except (OSError, RuntimeError) as err:
        raise Refused(f"no such file: {err}") from None
    if not _within(target, real_root):
        raise Refused("path leads outside its folder")
    return target


def archived_file(archive_dir: Path, snapshot_id: str, relative: str) -> Path:
    """The archived file ``relative`` of a snapshot; a folder or a missing file is :class:`Refused`."""
    target = safe_join(archive_dir, f"{snapshot_id}/{relative}")
    if not _within(target, archive_dir.resolve() / snapshot_id):
        # e.g. a symlink from one snapshot's folder into another's: still refused.
        raise Refused("path leads outside the snapshot's folder")
    if not target.is_file():
        raise Refused("not a regular file")
    return target


def open_regular(path: Path):
    """Open a checked path for reading; refuse it if it turned into a symlink or non-file since the check."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise Refused(f"cannot open: {err.strerror}") from None
    stream = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        stream.close()
        raise Refused("not a regular file")
    return stream


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    is_link: bool


def list_outputs(folder: Path, limit: int = MAX_LISTED) -> tuple[list[Entry], bool]:
    """Files under ``folder`` (relative paths, sizes), symlinks not followed. Second value: truncated."""
    entries: list[Entry] = []
    if not folder.is_dir():
        return entries, False
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            scanned = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in scanned:
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
                continue
            if len(entries) >= limit:
                return sorted(entries, key=lambda e: e.path), True
            info = entry.stat(follow_symlinks=False)
            entries.append(Entry(Path(entry.path).relative_to(folder).as_posix(), info.st_size, entry.is_symlink()))
    return sorted(entries, key=lambda e: e.path), False


@dataclass(frozen=True)
class Tail:
    text: str
    size: int
    truncated: bool
    error: str = ""


def tail(path: str, allowed_root: Path, limit: int = TAIL_BYTES) -> Tail:
    """The last ``limit`` bytes of the log file ``path``, decoded leniently."""
    if not path:
        return Tail("", 0, False, "no log file")
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError):
        return Tail("", 0, False, "log file is gone")
    if not _within(real, allowed_root.resolve()):
        return Tail("", 0, False, "log file is outside the data folder: not shown")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as err:
        return Tail("", 0, False, f"cannot open log file: {err.strerror}")
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            return Tail("", 0, False, "not a regular file")
        start = max(0, info.st_size - limit)
        stream.seek(start)
        data = stream.read(limit)
    if start:
        # Drop the partial line (and any partial UTF-8 sequence) the cut landed in.
        newline = data.find(b"\n")
        data = data[newline + 1:] if 0 <= newline < len(data) - 1 else data
    return Tail(data.decode("utf-8", errors="replace"), info.st_size, start > 0)
