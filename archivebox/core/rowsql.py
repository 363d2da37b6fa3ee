"""The tick's hot path, as hand-written statements, and the reads and inserts shared above.

Building a query with the ORM costs about 0.3 ms of Python per statement, more than the
statement itself; ticks run thousands of times a second, so the dispatcher's and the
tick's claims (:func:`dispatch_claim`, :func:`claim`, :func:`unclaim`), the due scans
(which also make SQLite walk the due index), :func:`wake` and the compare-and-swap write
(:func:`update`) are written out here, in SQL that SQLite (3.35+) and Postgres both run.
The other functions (:func:`values`, :func:`insert`, :func:`insert_new`, :func:`load`,
:func:`attach`) go through the ORM: measured end to end, their hand-written versions
gained less than 5 % (see archivebox.tuning's list of removed tricks).
"""

from __future__ import annotations

import datetime as dt

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Prefetch, prefetch_related_objects


INSERT_BATCH = 200  # rows per INSERT statement (SQLite allows 32,766 parameters per statement)


def db_connection():
    """This thread's default connection itself: ``django.db.connection`` is a proxy that looks
    the connection up again on every attribute read, dozens of times per statement here."""
    return connections[DEFAULT_DB_ALIAS]


def db_datetime(value: dt.datetime | None, db=None):
    return (db if db is not None else db_connection()).ops.adapt_datetimefield_value(value)


def db_pk(model, pk, db=None):
    return model._meta.pk.get_db_prep_value(pk, db if db is not None else db_connection())


def dispatch_claim(model, statuses, now: dt.datetime, token: dt.datetime, limit: int, ids=None) -> list:
    """Claim up to ``limit`` due rows (of ``ids`` if given), earliest due first, for one batch:
    their ``retry_at`` becomes ``token``, so no other dispatcher sees them due. Returns their ids.
    Given ids are looked up by primary key; otherwise the due index is walked.

    On Postgres the inner SELECT skips rows another dispatcher is claiming at this moment.
    """
    db = db_connection()
    table, pk_column = model._meta.db_table, model._meta.pk.column
    marks = ", ".join(["%s"] * len(statuses))
    params = [db_datetime(token, db), True, False, db_datetime(now, db), *map(str, statuses)]
    only = ""
    if ids is not None:
        ids = list(ids)
        if not ids:
            return []
        only = f" AND {pk_column} IN ({', '.join(['%s'] * len(ids))})"
        params += [db_pk(model, pk, db) for pk in ids]
    lock = " FOR UPDATE SKIP LOCKED" if db.vendor == "postgresql" else ""
    sql = (f"UPDATE {table} SET retry_at = %s, claimed = %s, woken = %s WHERE {pk_column} IN ("
           f"SELECT {pk_column} FROM {table}{'' if only else _by_due_index(model)} WHERE retry_at <= %s AND status IN ({marks}){only} "
           f"ORDER BY retry_at LIMIT %s{lock}) AND retry_at <= %s RETURNING {pk_column}")
    params += [limit, db_datetime(now, db)]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    pk_field = model._meta.pk
    return [pk_field.to_python(row[0]) for row in rows]


def _by_retry_at(model, select: str, comparison: str, statuses, now: dt.datetime, tail: str = ""):
    """``SELECT select`` over rows of these statuses whose retry_at compares to ``now``,
    walking the due index; the first row fetched (or None)."""
    db = db_connection()
    sql = (f"SELECT {select} FROM {model._meta.db_table}{_by_due_index(model)} WHERE retry_at {comparison} %s "
           f"AND status IN ({', '.join(['%s'] * len(statuses))}){tail}")
    with db.cursor() as cursor:
        cursor.execute(sql, [db_datetime(now, db), *map(str, statuses)])
        return cursor.fetchone()


def any_due(model, statuses, now: dt.datetime) -> bool:
    """Is any row of these statuses due?"""
    return _by_retry_at(model, "1", "<=", statuses, now, " LIMIT 1") is not None


def count_due(model, statuses, now: dt.datetime) -> int:
    """How many rows of these statuses are due (walking only the due rows)."""
    return _by_retry_at(model, "COUNT(*)", "<=", statuses, now)[0]


def next_due(model, statuses, now: dt.datetime) -> dt.datetime | None:
    """The earliest future ``retry_at`` among rows of these statuses."""
    row = _by_retry_at(model, "retry_at", ">", statuses, now, " ORDER BY retry_at LIMIT 1")
    if row is None:
        return None
    return _reader(model, ("retry_at",)).convert(row, db_connection())[0]


def _by_due_index(model) -> str:
    """Make SQLite walk the partial ``<model>_due`` index in retry_at order, instead of the
    status index plus a sort of every unfinished row (its planner's choice without statistics)."""
    db = db_connection()
    if db.vendor != "sqlite":
        return ""
    name = next((index.name for index in model._meta.indexes if index.name.endswith("_due")), None)
    return f" INDEXED BY {name}" if name else ""


def claim(model, pks, seen: dt.datetime | None, claim_at: dt.datetime, now: dt.datetime) -> list:
    """Compare-and-swap ``retry_at`` of the rows ``pks`` to ``claim_at``; returns the rows won.

    With ``seen`` (the dispatch token) a row must still have that ``retry_at``; without,
    it must be due. The rows come back as model instances, read in the same statement.
    """
    db = db_connection()
    pks = list(pks)
    reader = _reader(model)
    key = ("claim", model, len(pks), seen is not None)
    sql = _SQL.get(key)
    if sql is None:
        condition = "retry_at = %s" if seen is not None else "retry_at <= %s"
        sql = _SQL[key] = (f"UPDATE {model._meta.db_table} SET retry_at = %s, claimed = %s, woken = %s "
                           f"WHERE {model._meta.pk.column} IN ({', '.join(['%s'] * len(pks))}) AND {condition} "
                           f"RETURNING {reader.columns('')}")
    params = [db_datetime(claim_at, db), True, False, *(db_pk(model, pk, db) for pk in pks), db_datetime(seen if seen is not None else now, db)]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [reader.instance(row, db) for row in rows]


def unclaim(model, pks, token: dt.datetime, now: dt.datetime) -> int:
    """Give back rows a dispatcher claimed with ``token`` (its message could not be sent)."""
    db = db_connection()
    marks = ", ".join(["%s"] * len(pks))
    sql = (f"UPDATE {model._meta.db_table} SET retry_at = %s, claimed = %s "
           f"WHERE {model._meta.pk.column} IN ({marks}) AND retry_at = %s")
    with db.cursor() as cursor:
        cursor.execute(sql, [db_datetime(now, db), False, *(db_pk(model, pk, db) for pk in pks), db_datetime(token, db)])
        return cursor.rowcount


def wake(model, pks, now: dt.datetime) -> int:
    """Make rows due now, except rows a tick has claimed, which are marked woken instead."""
    db = db_connection()
    marks = ", ".join(["%s"] * len(pks))
    sql = (f"UPDATE {model._meta.db_table} SET retry_at = CASE WHEN claimed THEN retry_at ELSE %s END, "
           f"woken = CASE WHEN claimed THEN %s ELSE woken END "
           f"WHERE {model._meta.pk.column} IN ({marks}) AND retry_at > %s")
    with db.cursor() as cursor:
        cursor.execute(sql, [db_datetime(now, db), True, *(db_pk(model, pk, db) for pk in pks), db_datetime(now, db)])
        return cursor.rowcount


_LOOKUPS = {"": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "in": "IN"}


def update(model, values: dict, where: dict, retry_at: tuple[dt.datetime, dt.datetime | None] | None = None) -> int:
    """``UPDATE model SET values WHERE where`` without the ORM's query building; returns the row count.

    ``where`` keys are field names with an optional ``__lt``/``__lte``/``__gt``/``__gte``/``__in``.
    ``retry_at=(now, next)`` sets retry_at to ``next``, or to ``now`` if the row was woken meanwhile.
    """
    db = db_connection()
    assignments, params = [], []
    for name, value in values.items():
        field = model._meta.get_field(name)
        assignments.append(f"{field.column} = %s")
        params.append(field.get_db_prep_save(value, db))
    if retry_at is not None:
        now, following = retry_at
        if following is None:
            assignments.append("retry_at = NULL")
        else:
            assignments.append("retry_at = CASE WHEN woken THEN %s ELSE %s END")
            params += [db_datetime(now, db), db_datetime(following, db)]
    conditions = []
    for key, value in where.items():
        name, _, lookup = key.partition("__")
        field = model._meta.get_field(name)
        if lookup == "in":
            values_in = list(value)
            conditions.append(f"{field.column} IN ({', '.join(['%s'] * len(values_in))})")
            params += [field.get_db_prep_value(v, db) for v in values_in]
        else:
            conditions.append(f"{field.column} {_LOOKUPS[lookup]} %s")
            params.append(field.get_db_prep_value(value, db))
    sql = f"UPDATE {model._meta.db_table} SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}"
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def insert(obj) -> None:
    """``INSERT`` a new model instance (its ``pre_save`` values, such as ``auto_now`` dates,
    included) without ``save()``'s own work (the caller has fired the save hook already); a
    unique conflict raises IntegrityError and leaves nothing behind."""
    type(obj)._default_manager.bulk_create([obj])


def insert_new(objs: list) -> None:
    """``INSERT`` new instances of one model, skipping a row whose unique key exists already
    (its instance stays unsaved)."""
    if objs:
        type(objs[0])._default_manager.bulk_create(objs, batch_size=INSERT_BATCH, ignore_conflicts=True)


def values(model, names: tuple[str, ...], where: dict, order_by: str = "") -> list[tuple]:
    """``SELECT names FROM model WHERE where`` (``order_by``: field names, comma-separated)."""
    found = model._default_manager.filter(**where)
    if order_by:
        found = found.order_by(*(name.strip() for name in order_by.split(",")))
    return list(found.values_list(*names))


def load(model, pks, *relations: str) -> dict:
    """``{pk: instance}`` for the rows ``pks``, with the foreign keys ``relations`` loaded in the
    same statement (their models' ``lazy_fields`` deferred, as :func:`attach` does)."""
    pks = list(dict.fromkeys(pks))
    if not pks:
        return {}
    return _with_related(model._default_manager.all(), model, relations).in_bulk(pks)


def attach(objects: list, *relations: str) -> None:
    """Load the foreign keys ``relations`` of ``objects`` (one query per relation) and set them
    on the objects. A related model's ``lazy_fields`` (bulky columns its readers here do not
    need, such as a crawl's list of seed URLs) stay deferred: reading one loads it then."""
    if not objects or not relations:
        return
    model = type(objects[0])
    lookups = [Prefetch(name, queryset=_lazy(model._meta.get_field(name).related_model)) for name in relations]
    prefetch_related_objects(objects, *lookups)


def _lazy(model):
    return model._default_manager.defer(*getattr(model, "lazy_fields", ()))


def _with_related(queryset, model, relations: tuple[str, ...]):
    if not relations:
        return queryset  # select_related() without names would follow every foreign key
    deferred = [f"{name}__{lazy}" for name in relations
                for lazy in getattr(model._meta.get_field(name).related_model, "lazy_fields", ())]
    return queryset.select_related(*relations).defer(*deferred)


class _Reader:
    """How to read some columns of a model: the fields, and the converters of those that
    have any (as the ORM applies them), worked out once per model and set of fields."""

    def __init__(self, model, fields: list):
        db = db_connection()
        self.model = model
        self.fields = fields
        self.attnames = [f.attname for f in fields]
        self.pk_index = fields.index(model._meta.pk) if model._meta.pk in fields else None
        self.converters = []
        for index, field in enumerate(fields):
            expression = field.get_col(model._meta.db_table)
            chain = db.ops.get_db_converters(expression) + expression.get_db_converters(db)
            if chain:
                self.converters.append((index, expression, chain))

    def columns(self, alias: str) -> str:
        return ", ".join(f"{alias}.{f.column}" if alias else f.column for f in self.fields)

    def convert(self, row, db) -> tuple:
        values = list(row)
        for index, expression, chain in self.converters:
            value = values[index]
            for convert in chain:
                value = convert(value, expression, db)
            values[index] = value
        return tuple(values)

    def instance(self, row, db):
        """A model instance from raw column values, converted as the ORM would."""
        return self.model.from_db(db.alias, self.attnames, self.convert(row, db))


_READERS: dict = {}
_SQL: dict = {}  # statement texts by their shape (the caches hold a few dozen entries in all)


def _reader(model, names: tuple[str, ...] | None = None) -> _Reader:
    """The reader of ``names`` (by default every concrete field)."""
    db = db_connection()
    key = (model, names, db.vendor)
    reader = _READERS.get(key)
    if reader is None:
        fields = [model._meta.get_field(name) for name in names] if names is not None else list(model._meta.concrete_fields)
        reader = _READERS[key] = _Reader(model, fields)
    return reader
