"""What the benchmarks share."""

from __future__ import annotations

import tempfile
from pathlib import Path


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank ``pct`` percentile of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


class Scratch:
    """Where a benchmark puts its collections: one folder per measurement, all removed at
    the end. Removing a measurement's files right away made the next one slower: on ext4,
    allocating an inode skips over inodes freed in the last seconds (``recently_deleted``),
    which here cost up to 1 ms per file or folder created."""

    def __init__(self, base: str | None = None, prefix: str = "abx-bench-"):
        self._dir = tempfile.TemporaryDirectory(prefix=prefix, dir=base)
        self.root = Path(self._dir.name)

    def new(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc) -> None:
        self._dir.cleanup()


def add_dir_option(parser) -> None:
    parser.add_argument("--dir", default=None, help="base folder for the collections (default: the system temp folder; "
                                                     "/dev/shm leaves file-system costs out)")
