"""Live progress of a crawl, and whether worker pools are alive."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TextIO

from django.db.models import Count
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Crawl, Process, Snapshot

BAR_WIDTH = 30


@dataclass(frozen=True)
class CrawlCounts:
    snapshots_by_status: dict[str, int]
    results_by_status: dict[str, int]

    @property
    def snapshots_total(self) -> int:
        return sum(self.snapshots_by_status.values())

    @property
    def snapshots_done(self) -> int:
        return self.snapshots_by_status.get("sealed", 0) + self.snapshots_by_status.get("failed", 0)

    @property
    def results_done(self) -> int:
        return sum(n for s, n in self.results_by_status.items() if s in ArchiveResult.graph.finals)


def by_status(queryset) -> dict[str, int]:
    return dict(queryset.values_list("status").annotate(n=Count("pk")).order_by())


def crawl_counts(crawl: Crawl) -> CrawlCounts:
    return CrawlCounts(by_status(Snapshot.objects.filter(crawl=crawl)), by_status(ArchiveResult.objects.filter(crawl=crawl)))


def pools_alive() -> bool:
    """True if a ticks pool and a side-effects pool with fresh heartbeats exist (any machine)."""
    live = Process.objects.filter(kind=Process.Kind.WORKER, status="running", retry_at__gt=timezone.now())
    labels = list(live.values_list("label", flat=True))
    return any(l.startswith("ticks") for l in labels) and any(l.startswith("sideeffects") for l in labels)


class Progress:
    """A progress bar redrawn in place on a terminal; plain lines (when something changed) otherwise."""

    def __init__(self, crawl: Crawl, stream: TextIO, plain_every: float = 5.0):
        self.crawl = crawl
        self.stream = stream
        self.tty = stream.isatty()
        self.plain_every = plain_every
        self._last_line = ""
        self._last_plain = 0.0
        self._started = time.monotonic()

    def line(self) -> tuple[str, float]:
        counts = crawl_counts(self.crawl)
        total = max(counts.snapshots_total, 1)
        results = counts.results_by_status
        failed = results.get("failed", 0)
        return (f"snapshots {counts.snapshots_done}/{counts.snapshots_total}  "
                f"results {counts.results_done} done, {failed} failed  "
                f"{time.monotonic() - self._started:5.1f}s"), counts.snapshots_done / total

    def update(self) -> None:
        text, fraction = self.line()
        if self.tty:
            filled = int(fraction * BAR_WIDTH)
            self.stream.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {text}\033[K")
            self.stream.flush()
        elif text.split("  ")[:2] != self._last_line.split("  ")[:2] and time.monotonic() - self._last_plain >= self.plain_every:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last_plain = time.monotonic()
        self._last_line = text

    def finish(self) -> None:
        if self.tty and self._last_line:
            self.stream.write("\n")
            self.stream.flush()
