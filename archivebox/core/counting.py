"""How many rows a list has, without a scan of millions: exact when that is cheap, else an
estimate or a lower bound, and said so.

A filtered list is counted up to ``cap`` rows (``SELECT count(*) FROM (... LIMIT cap + 1)``:
an index read of at most that many entries); past it, the total is "more than cap". A whole
table is estimated from the backend's statistics once it is larger than ``EXACT_BELOW``
rows (Postgres's ``reltuples``; SQLite's largest rowid, which counts the rows ever added:
exact until rows are deleted), since counting it exactly reads all of it.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Count, QuerySet
from django.utils.functional import cached_property

COUNT_CAP = 10_000
EXACT_BELOW = 500_000
# Rows read to estimate how a large table's finished rows split between their states: on
# SQLite, CLUSTERS runs of consecutive rowids at random places (a few pages each; 2,000 rows
# one by one read 2,000 pages: 80-190 ms of a million-row table's status, against 10 ms).
SAMPLE = 2_000
CLUSTERS = 40
# On Postgres a sample is whole blocks picked at random, at least this many: a sample of a
# few rows of a large table (a hundred snapshots of a million: two blocks expected) came
# back empty one time in eight.
MIN_BLOCKS = 20


@dataclass(frozen=True)
class Total:
    """A list's size: ``exact``, else ``at_least`` (more than ``value``) or ``estimated`` (about ``value``)."""

    value: int
    exact: bool = True
    estimated: bool = False

    @property
    def at_least(self) -> bool:
        return not self.exact and not self.estimated

    def pages(self, per_page: int) -> int:
        return max(1, math.ceil(self.value / per_page))

    def __str__(self) -> str:
        if self.exact:
            return f"{self.value:,}"
        return f"about {self.value:,}" if self.estimated else f"more than {self.value:,}"


def count(queryset: QuerySet, at_least: int = 0, cap: int = COUNT_CAP) -> Total:
    """The size of ``queryset``; ``at_least``: the caller already knows it has more rows than
    that (a search part too common to count), so it is not counted."""
    if at_least:
        return Total(min(at_least, cap), exact=False)
    if not queryset.query.where.children and not queryset.query.is_sliced:
        estimate = table_rows(queryset)
        if estimate is not None and estimate >= EXACT_BELOW:
            return Total(estimate, exact=False, estimated=True)
    found = queryset.order_by()[:cap + 1].count()
    return Total(cap, exact=False) if found > cap else Total(found)


def table_rows(queryset: QuerySet) -> int | None:
    """The backend's estimate of how many rows the queryset's table has (None if it has none)."""
    connection = connections[queryset.db]
    table = connection.ops.quote_name(queryset.model._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [queryset.model._meta.db_table])
            row = cursor.fetchone()
            return int(row[0]) if row and row[0] is not None and row[0] >= 0 else None
        if connection.vendor == "sqlite":
            cursor.execute(f"SELECT max(rowid) FROM {table}")  # noqa: S608 - a quoted table name of our own
            row = cursor.fetchone()
            return int(row[0] or 0)
    return None


def by_status(model, exact: bool = False) -> tuple[dict[str, int], bool]:
    """``({state: rows}, exact)`` for a stateful model's table. Exact for a table under
    EXACT_BELOW rows (or when asked); for a larger one, the unfinished states are counted
    exactly (they are the rows of the due index) and the finished ones estimated: the
    table's estimated size less the unfinished rows, split as a random sample of SAMPLE
    finished rows splits. (A GROUP BY over 16 million results read all of them: seconds.)"""
    rows = model.objects.all()
    estimate = None if exact else table_rows(rows)
    if estimate is None or estimate < EXACT_BELOW:
        return dict(rows.values_list("status").annotate(n=Count("pk")).order_by()), True
    # Read through the due index (its rows are the unfinished ones) and counted here: with a
    # GROUP BY, SQLite walked the status index instead, all 16 million entries of it.
    counts = dict(Counter(rows.filter(retry_at__isnull=False).values_list("status", flat=True).order_by()))
    sampled = sample(model, "status", estimate, SAMPLE, CLUSTERS, finished=True)
    finished = max(0, estimate - sum(counts.values()))
    for status in set(sampled):
        counts[status] = round(finished * sampled.count(status) / len(sampled))
    return counts, False


def sample(model, column: str, estimate: int, size: int, clusters: int, finished: bool = False) -> list:
    """``column`` of about ``size`` rows of ``model``'s table (of its finished rows only, with
    ``finished``) taken at random across it: on SQLite in ``clusters`` runs of consecutive
    rowids (a run reads a few pages; rows one by one would read a page each), on Postgres
    in random blocks (TABLESAMPLE SYSTEM, at least MIN_BLOCKS of them: more rows than
    ``size`` then). ``estimate``: the table's rows (``table_rows``)."""
    connection = connections[model.objects.db]
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(column)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT relpages FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table])
            pages = max(1, cursor.fetchone()[0] or 1)
            percent = min(100.0, 100.0 * max(size / max(estimate, 1), MIN_BLOCKS / pages))
            cursor.execute(f"SELECT {column} FROM {table} TABLESAMPLE SYSTEM (%s)"  # noqa: S608
                           + (" WHERE retry_at IS NULL" if finished else ""), [percent])
        else:
            run = max(1, size // clusters)
            firsts = range(1, max(estimate - run, 1) + 1)  # where a run may start and still end in the table
            starts = sorted(random.sample(firsts, min(clusters, len(firsts))))
            ranges = " OR ".join("rowid BETWEEN %s AND %s" for _ in starts)
            cursor.execute(f"SELECT {column} FROM {table} WHERE ({ranges})" + (" AND retry_at IS NULL" if finished else ""),  # noqa: S608
                           [bound for start in starts for bound in (start, start + run - 1)])
        return [row[0] for row in cursor.fetchall()]


class CountingPaginator(Paginator):
    """Django's paginator with :func:`count`'s total (for the admin's change lists): past the
    cap it shows the pages it can reach. ``at_least``: the list is known to be longer than that
    (a search too common to count), so it is not counted."""

    def __init__(self, *args, at_least: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.at_least = at_least

    @cached_property
    def total(self) -> Total:
        return count(self.object_list, at_least=self.at_least)

    @cached_property
    def count(self) -> int:
        return self.total.value
