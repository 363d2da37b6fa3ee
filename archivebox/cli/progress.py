"""Live progress of a crawl, and whether worker pools are alive."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TextIO

from django.db.models import Count
from django.utils import timezone

from archivebox.core.graphs import ArchiveResultGraph, ProcessGraph, SnapshotGraph
from archivebox.core.models import ArchiveResult, Crawl, Machine, Process, Snapshot
from archivebox.process import runner

BAR_WIDTH = 30
SPINNER = "|/-\\"
DEFAULT_COLUMNS = 100


def terminal_columns(stream: TextIO) -> int:
    """The width of the terminal ``stream`` draws on (``COLUMNS`` first, as shells set it)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else DEFAULT_COLUMNS


@dataclass(frozen=True)
class CrawlCounts:
    snapshots_by_status: dict[str, int]
    results_by_status: dict[str, int]

    @property
    def snapshots_total(self) -> int:
        return sum(self.snapshots_by_status.values())

    @property
    def snapshots_done(self) -> int:
        return sum(self.snapshots_by_status.get(state, 0) for state in SnapshotGraph.finals)

    @property
    def results_done(self) -> int:
        return sum(n for s, n in self.results_by_status.items() if s in ArchiveResult.graph.finals)


def by_status(queryset) -> dict[str, int]:
    return dict(queryset.values_list("status").annotate(n=Count("pk")).order_by())


def crawl_counts(crawl: Crawl) -> CrawlCounts:
    return CrawlCounts(by_status(Snapshot.objects.filter(crawl=crawl)), by_status(ArchiveResult.objects.filter(crawl=crawl)))


def pools_alive(machine: Machine | None = None) -> bool:
    """True if a ticks pool and a side-effects pool are alive: their heartbeat is fresh and,
    for a worker of ``machine`` (this one), its process is still there (a worker killed a
    moment ago keeps a fresh heartbeat until it expires)."""
    live = Process.objects.filter(kind=Process.Kind.WORKER, status=ProcessGraph.running, retry_at__gt=timezone.now())
    pools = set()
    for pool, machine_id, pid, pid_started in live.values_list("pool", "machine_id", "pid", "pid_started"):
        if machine is None or machine_id != machine.pk or runner.is_running(pid, pid_started):
            pools.add(pool)
    return {"ticks", "sideeffects"} <= pools


def progress_text(counts: CrawlCounts, elapsed: float) -> str:
    """``3/10 snapshots sealed (1 failed) | results 12 done, 2 failed, 4 running | 12.3s``."""
    snapshots = counts.snapshots_by_status
    results = counts.results_by_status
    failed = f" ({snapshots[SnapshotGraph.failed]} failed)" if snapshots.get(SnapshotGraph.failed) else ""
    running = results.get(ArchiveResultGraph.started, 0)
    waiting = results.get(ArchiveResultGraph.queued, 0)
    return (f"{snapshots.get(SnapshotGraph.sealed, 0)}/{counts.snapshots_total} snapshots sealed{failed} | "
            f"results {counts.results_done} done, {results.get(ArchiveResultGraph.failed, 0)} failed, {running} running, {waiting} waiting | "
            f"{elapsed:.1f}s")


class Progress:
    """A live bar redrawn in place on a terminal; otherwise a plain line whenever the counts change.

    Plain lines are rate-limited to one per ``plain_every`` seconds, and :meth:`finish`
    always writes the final counts, so a log shows where the crawl ended.
    """

    def __init__(self, crawl: Crawl, stream: TextIO, plain_every: float = 5.0):
        self.crawl = crawl
        self.stream = stream
        self.tty = stream.isatty()
        self.plain_every = plain_every
        self._last_counts: CrawlCounts | None = None
        self._printed_counts: CrawlCounts | None = None
        self._last_plain = 0.0
        self._started = time.monotonic()
        self._frame = 0
        self._last_update = float("-inf")

    def bar(self, counts: CrawlCounts) -> str:
        fraction = counts.snapshots_done / counts.snapshots_total if counts.snapshots_total else 0.0
        filled = int(fraction * BAR_WIDTH)
        return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction * 100:3.0f}%"

    def update(self, force: bool = False) -> None:
        # Counting costs two queries: at most twice a second on a terminal, once otherwise.
        if not force and time.monotonic() - self._last_update < (0.5 if self.tty else 1.0):
            return
        self._last_update = time.monotonic()
        counts = crawl_counts(self.crawl)
        elapsed = time.monotonic() - self._started
        if self.tty:
            self._frame += 1
            spinner = SPINNER[self._frame % len(SPINNER)]
            width = terminal_columns(self.stream)
            line = f"{spinner} {self.bar(counts)} {progress_text(counts, elapsed)}"
            self.stream.write("\r" + line[: max(width - 1, 10)] + "\033[K")
            self.stream.flush()
        elif counts != self._printed_counts and time.monotonic() - self._last_plain >= self.plain_every:
            self._print_plain(counts, elapsed)
        self._last_counts = counts

    def _print_plain(self, counts: CrawlCounts, elapsed: float) -> None:
        self.stream.write(progress_text(counts, elapsed) + "\n")
        self.stream.flush()
        self._printed_counts = counts
        self._last_plain = time.monotonic()

    def finish(self) -> None:
        """Show the final counts (the bar at its end on a terminal)."""
        if self.tty:
            self.update(force=True)
            self.stream.write("\n")
            self.stream.flush()
            return
        counts = crawl_counts(self.crawl)
        if counts != self._printed_counts:
            self._print_plain(counts, time.monotonic() - self._started)
