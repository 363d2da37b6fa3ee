"""A schedule: the same URLs archived again every period (the page over time)."""

from __future__ import annotations

import datetime as dt

from croniter import croniter
from django.db import models
from django.utils import timezone

from archivebox.core.models.base import uuid7

# ArchiveBox's names for the common periods.
EVERY = {"minute": "* * * * *", "hourly": "0 * * * *", "daily": "0 0 * * *", "weekly": "0 0 * * 0",
         "monthly": "0 0 1 * *", "yearly": "0 0 1 1 *"}


class BadSchedule(ValueError):
    """``--every`` is neither a known period nor a cron expression."""


def cron_of(every: str) -> str:
    """``daily`` -> ``0 0 * * *``; a cron expression is checked and kept as given."""
    expression = EVERY.get(every.strip().lower(), every.strip())
    if not croniter.is_valid(expression):
        raise BadSchedule(f"--every expects {', '.join(EVERY)} or a cron expression such as '0 */6 * * *', got {every!r}")
    return expression


def next_run(cron: str, after: dt.datetime) -> dt.datetime:
    """The first time the cron expression names strictly after ``after`` (UTC)."""
    return croniter(cron, after.astimezone(dt.timezone.utc)).get_next(dt.datetime)


class Schedule(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    every = models.CharField(max_length=100, help_text="daily, weekly, monthly, or a cron expression (UTC)")
    cron = models.CharField(max_length=100, editable=False)
    urls = models.TextField(help_text="URLs, one per line")
    depth = models.PositiveSmallIntegerField(default=0)
    tags_str = models.CharField(max_length=1024, blank=True, default="")
    only_new = models.BooleanField(default=False, help_text="add only URLs not archived yet, instead of archiving them again")
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(db_index=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_crawl = models.ForeignKey("core.Crawl", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    runs = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"every {self.every}: {self.urls.splitlines()[0] if self.urls else ''}"

    def save(self, *args, **kwargs):
        self.cron = cron_of(self.every)
        if self.next_run_at is None:
            self.next_run_at = next_run(self.cron, timezone.now())
        super().save(*args, **kwargs)
