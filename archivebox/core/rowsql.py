"""The tick's hot path and the reads made on every hook run, as hand-written statements.

Building a query with the ORM costs about 0.3 ms of Python per statement (more on a busy
machine), more than the statement itself. Ticks run thousands of times a second, so the
dispatcher's and the tick's claims (:func:`dispatch_claim`, :func:`claim`, :func:`unclaim`),
the due scans (which also make SQLite walk the due index), :func:`wake` and the
compare-and-swap write (:func:`update`) are written out here, in SQL that SQLite (3.35+)
and Postgres both run, with :func:`attach`, which loads a claimed batch's related rows;
so are :func:`values` and :func:`load`, the reads that a hook run and the side effects
that follow it make about a dozen times (archivebox.tuning, 3, says what each gains).
Inserts (:func:`insert`, :func:`insert_new`) go through the ORM: their hand-written
versions gained less than 1 %.
"""

from __future__ import annotations

import datetime as dt

from django.db import DEFAULT_DB_ALIAS, connections


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


def _where(model, where: dict, params: list, db) -> str:
    """The conditions of ``where`` ANDed, their parameters appended to ``params``. Keys are
    field names with an optional ``__lt``/``__lte``/``__gt``/``__gte``/``__in``/``__isnull``."""
    conditions = []
    for key, value in where.items():
        name, _, lookup = key.partition("__")
        field = model._meta.get_field(name)
        if lookup == "isnull":
            conditions.append(f"{field.column} IS {'' if value else 'NOT '}NULL")
        elif lookup == "in":
            values_in = list(value)
            conditions.append(f"{field.column} IN ({', '.join(['%s'] * len(values_in))})")
            params += [field.get_db_prep_value(v, db) for v in values_in]
        else:
            conditions.append(f"{field.column} {_LOOKUPS[lookup]} %s")
            params.append(field.get_db_prep_value(value, db))
    return " AND ".join(conditions)


def update(model, values: dict, where: dict, retry_at: tuple[dt.datetime, dt.datetime | None] | None = None) -> int:
    """``UPDATE model SET values WHERE where`` without the ORM's query building; returns the row count.

    ``where`` as :func:`_where` reads it. ``retry_at=(now, next)`` sets retry_at to ``next``,
    or to ``now`` if the row was woken meanwhile.
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
    sql = f"UPDATE {model._meta.db_table} SET {', '.join(assignments)} WHERE {_where(model, where, params, db)}"
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


def values(model, names: tuple[str, ...], where: dict, order_by: str = "", limit: int | None = None) -> list[tuple]:
    """``SELECT names FROM model WHERE where [ORDER BY order_by] [LIMIT limit]``: converted
    values, without building a QuerySet (``where`` as :func:`_where` reads it)."""
    db = db_connection()
    reader = _reader(model, names)
    params: list = []
    sql = f"SELECT {reader.columns('')} FROM {model._meta.db_table} WHERE {_where(model, where, params, db)}"
    if order_by:
        sql += f" ORDER BY {order_by}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [reader.convert(row, db) for row in rows]


def load(model, pks, *relations: str) -> dict:
    """``{pk: instance}`` for the rows ``pks``, read in one statement, with the foreign keys
    ``relations`` loaded too (as :func:`attach` does, in the same statement)."""
    pks = list(dict.fromkeys(pks))
    if not pks:
        return {}
    db = db_connection()
    reader, related = _reader(model), _related(model, relations)
    key = ("load", model, relations, len(pks))
    sql = _SQL.get(key)
    if sql is None:
        columns = ", ".join([reader.columns("base"), *(r.columns(alias) for _, alias, r, _ in related)])
        sql = _SQL[key] = (f"SELECT {columns} FROM {model._meta.db_table} base {_join_sql(related)} "
                           f"WHERE base.{model._meta.pk.column} IN ({', '.join(['%s'] * len(pks))})")
    with db.cursor() as cursor:
        cursor.execute(sql, [db_pk(model, pk, db) for pk in pks])
        rows = cursor.fetchall()
    found = {}
    for row in rows:
        obj = reader.instance(row, db)
        _set_related(obj, related, row, len(reader.fields), db)
        found[obj.pk] = obj
    return found


def attach(objects: list, *relations: str) -> None:
    """Load the foreign keys ``relations`` of ``objects`` in one statement (a LEFT JOIN per
    relation) and set them on the objects (what select_related does, without building a
    QuerySet). A related model's ``lazy_fields`` (bulky columns its readers here do not
    need, such as a crawl's list of seed URLs) stay deferred: reading one loads it then."""
    if not objects or not relations:
        return
    db = db_connection()
    model = type(objects[0])
    by_pk = {obj.pk: obj for obj in objects}
    related, pk_reader = _related(model, relations), _reader(model, (model._meta.pk.name,))
    key = ("attach", model, relations, len(by_pk))
    sql = _SQL.get(key)
    if sql is None:
        pk_column = model._meta.pk.column
        columns = ", ".join(r.columns(alias) for _, alias, r, _ in related)
        sql = _SQL[key] = (f"SELECT base.{pk_column}, {columns} FROM {model._meta.db_table} base {_join_sql(related)} "
                           f"WHERE base.{pk_column} IN ({', '.join(['%s'] * len(by_pk))})")
    with db.cursor() as cursor:
        cursor.execute(sql, [db_pk(model, pk, db) for pk in by_pk])
        rows = cursor.fetchall()
    for row in rows:
        obj = by_pk.get(pk_reader.convert(row[:1], db)[0])
        if obj is not None:
            _set_related(obj, related, row, 1, db)


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


def _reader(model, names: tuple[str, ...] | None = None, lazy: bool = True) -> _Reader:
    """The reader of ``names`` (by default every concrete field; without ``lazy``, less the
    model's ``lazy_fields``)."""
    db = db_connection()
    key = (model, names, lazy, db.vendor)
    reader = _READERS.get(key)
    if reader is None:
        if names is not None:
            fields = [model._meta.get_field(name) for name in names]
        else:
            fields = [f for f in model._meta.concrete_fields if lazy or f.name not in getattr(model, "lazy_fields", ())]
        reader = _READERS[key] = _Reader(model, fields)
    return reader


def _related(model, relations: tuple[str, ...]) -> list:
    """``(name, alias, reader, join column)`` of each relation to LEFT JOIN (aliases r0, r1, ...)."""
    related = []
    for index, name in enumerate(relations):
        field = model._meta.get_field(name)
        related.append((name, f"r{index}", _reader(field.related_model, lazy=False), field.column))
    return related


def _join_sql(related: list) -> str:
    return " ".join(f"LEFT JOIN {r.model._meta.db_table} {alias} ON {alias}.{r.model._meta.pk.column} = base.{column}"
                    for _, alias, r, column in related)


def _set_related(obj, related: list, row, start: int, db) -> None:
    """Set the related objects read by :func:`_related` columns, from ``row[start:]``."""
    for name, _, reader, _ in related:
        values = row[start:start + len(reader.fields)]
        start += len(reader.fields)
        if values[reader.pk_index] is not None:
            setattr(obj, name, reader.instance(values, db))
