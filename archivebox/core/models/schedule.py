"""A schedule: the same URLs archived again every period (the page over time)."""

from __future__ import annotations

import datetime as dt

from croniter import CroniterBadDateError, croniter
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from archivebox.core.models.base import uuid7

# ArchiveBox's names for the common periods.
EVERY = {"minute": "* * * * *", "hourly": "0 * * * *", "daily": "0 0 * * *", "weekly": "0 0 * * 0",
         "monthly": "0 0 1 * *", "yearly": "0 0 1 1 *", "hour": "0 * * * *", "day": "0 0 * * *", "week": "0 0 * * 0",
         "month": "0 0 1 * *", "year": "0 0 1 1 *"}


# How a period reads in a sentence ("archived daily", "every minute").
PERIOD_WORDS = {"minute": "every minute", "hourly": "hourly", "daily": "daily", "weekly": "weekly", "monthly": "monthly",
                "yearly": "yearly"}


def period_text(every: str) -> str:
    """``daily`` -> ``daily``, ``minute`` -> ``every minute``, a cron expression -> ``on cron '0 */6 * * *'``."""
    name = every.strip().lower()
    return PERIOD_WORDS.get(name) or f"on cron '{every.strip()}'"


class BadSchedule(ValueError):
    """``--every`` is neither a known period nor a cron expression."""


# How many of a cron expression's next runs are looked at for two closer than the minimum
# period (500 runs of the rarest expression that has such a pair span centuries).
GAPS_CHECKED = 500


def cron_of(every: str, min_period: float | None = None) -> str:
    """``daily`` -> ``0 0 * * *``; a cron expression is checked and kept as given.

    Refused with one line: anything but a five-field cron expression (croniter's
    seconds and years fields would fire every second), an expression that never fires
    (``0 0 30 2 *``), and one with two runs closer than ``min_period`` seconds
    (``SCHEDULE_MIN_PERIOD``, 60 by default)."""
    expression = EVERY.get(every.strip().lower(), every.strip())
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise BadSchedule(f"--every expects {', '.join(list(EVERY)[:6])} or a five-field cron expression such as '0 */6 * * *', "
                          f"got {every!r}")
    minimum = settings.SCHEDULE_MIN_PERIOD if min_period is None else min_period
    runs = croniter(expression, dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc))
    try:
        previous = runs.get_next(dt.datetime)
        for _ in range(GAPS_CHECKED):
            following = runs.get_next(dt.datetime)
            if (following - previous).total_seconds() < minimum:
                raise BadSchedule(f"--every {every!r} runs more often than every {minimum:g} s (SCHEDULE_MIN_PERIOD)")
            previous = following
    except CroniterBadDateError:
        raise BadSchedule(f"--every {every!r} names no date that exists: it would never run") from None
    return expression


def next_run(cron: str, after: dt.datetime) -> dt.datetime:
    """The first time the cron expression names strictly after ``after`` (UTC)."""
    return croniter(cron, after.astimezone(dt.timezone.utc)).get_next(dt.datetime)


class Schedule(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    every = models.CharField(max_length=100, help_text="daily, weekly, monthly, or a cron expression (UTC)")
    cron = models.CharField(max_length=100, editable=False)
    # No URLs: a maintenance schedule, which runs `archivebox update` on the whole collection.
    urls = models.TextField(blank=True, default="", help_text="URLs, one per line (none: update the whole collection)")
    depth = models.PositiveSmallIntegerField(default=0)
    tags_str = models.CharField(max_length=1024, blank=True, default="")
    only_new = models.BooleanField(default=False, help_text="add only URLs not archived yet, instead of archiving them again")
    # Each run's crawl config (KEY: value), checked as ``archivebox add -c`` checks it (and, when
    # set over the network, as the REST API checks a remote caller's).
    config = models.JSONField(default=dict, blank=True, help_text='config of each run\'s crawl, e.g. {"PER_HOST_DELAY": 2}')
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(db_index=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_crawl = models.ForeignKey("core.Crawl", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    runs = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{period_text(self.every)}: {self.urls.splitlines()[0] if self.urls else 'update the whole collection'}"

    @property
    def is_maintenance(self) -> bool:
        """A schedule without URLs updates the whole collection (ArchiveBox's ``schedule --every=day``)."""
        return not self.urls.strip()

    def clean(self) -> None:
        """The admin's check of a schedule: its period (as ``archivebox schedule`` checks it)
        and its depth."""
        try:
            cron_of(self.every)
        except BadSchedule as err:
            raise ValidationError({"every": str(err)}) from None
        if self.depth > 9:
            raise ValidationError({"depth": "depth must be between 0 and 9"})

    def save(self, *args, **kwargs):
        self.cron = cron_of(self.every)
        if self.next_run_at is None:
            self.next_run_at = next_run(self.cron, timezone.now())
        super().save(*args, **kwargs)
