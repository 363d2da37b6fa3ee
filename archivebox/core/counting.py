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
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

COUNT_CAP = 10_000
EXACT_BELOW = 500_000


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


class CountingPaginator(Paginator):
    """Django's paginator with :func:`count`'s total (for the admin's change lists): past the
    cap it shows the pages it can reach, and the list's own "more" link goes on."""

    @cached_property
    def total(self) -> Total:
        return count(self.object_list)

    @cached_property
    def count(self) -> int:
        return self.total.value
