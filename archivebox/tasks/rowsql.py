"""The tick's hot path, as hand-written statements.

Building a query with the ORM costs about 0.3 ms of Python per statement, more than the
statement itself; ticks run thousands of times a second, so their claims and the
transitions' compare-and-swap writes are written out here, in SQL that SQLite (3.35+)
and Postgres both run. Everything else goes through the ORM.
"""

from __future__ import annotations

import datetime as dt

from django.db import connection


def db_datetime(value: dt.datetime | None):
    return connection.ops.adapt_datetimefield_value(value)


def db_pk(model, pk):
    return model._meta.pk.get_db_prep_value(pk, connection)


def dispatch_claim(model, statuses, now: dt.datetime, token: dt.datetime, limit: int, ids=None) -> list:
    """Claim up to ``limit`` due rows (of ``ids`` if given), earliest due first, for one batch:
    their ``retry_at`` becomes ``token``, so no other dispatcher sees them due. Returns their ids.

    On Postgres the inner SELECT skips rows another dispatcher is claiming at this moment.
    """
    table, pk_column = model._meta.db_table, model._meta.pk.column
    marks = ", ".join(["%s"] * len(statuses))
    params = [db_datetime(token), True, False, db_datetime(now), *statuses]
    only = ""
    if ids is not None:
        ids = list(ids)
        if not ids:
            return []
        only = f" AND {pk_column} IN ({', '.join(['%s'] * len(ids))})"
        params += [db_pk(model, pk) for pk in ids]
    lock = " FOR UPDATE SKIP LOCKED" if connection.vendor == "postgresql" else ""
    sql = (f"UPDATE {table} SET retry_at = %s, claimed = %s, woken = %s WHERE {pk_column} IN ("
           f"SELECT {pk_column} FROM {table}{_by_due_index(model)} WHERE retry_at <= %s AND status IN ({marks}){only} "
           f"ORDER BY retry_at LIMIT %s{lock}) AND retry_at <= %s RETURNING {pk_column}")
    params += [limit, db_datetime(now)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    pk_field = model._meta.pk
    return [pk_field.to_python(row[0]) for row in rows]


def _by_retry_at(model, select: str, comparison: str, statuses, now: dt.datetime, tail: str = ""):
    """``SELECT select`` over rows of these statuses whose retry_at compares to ``now``,
    walking the due index; the first row fetched (or None)."""
    sql = (f"SELECT {select} FROM {model._meta.db_table}{_by_due_index(model)} WHERE retry_at {comparison} %s "
           f"AND status IN ({', '.join(['%s'] * len(statuses))}){tail}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [db_datetime(now), *statuses])
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
    field = model._meta.get_field("retry_at")
    value = row[0]
    for convert in connection.ops.get_db_converters(field.get_col(model._meta.db_table)):
        value = convert(value, field.get_col(model._meta.db_table), connection)
    return value


def _by_due_index(model) -> str:
    """Make SQLite walk the partial ``<model>_due`` index in retry_at order, instead of the
    status index plus a sort of every unfinished row (its planner's choice without statistics)."""
    if connection.vendor != "sqlite":
        return ""
    name = next((index.name for index in model._meta.indexes if index.name.endswith("_due")), None)
    return f" INDEXED BY {name}" if name else ""


def claim(model, pks, seen: dt.datetime | None, claim_at: dt.datetime, now: dt.datetime) -> list:
    """Compare-and-swap ``retry_at`` of the rows ``pks`` to ``claim_at``; returns the rows won.

    With ``seen`` (the dispatch token) a row must still have that ``retry_at``; without,
    it must be due. The rows come back as model instances, read in the same statement.
    """
    pks = list(pks)
    fields = _fields(model)
    columns = ", ".join(f.column for f in fields)
    condition = "retry_at = %s" if seen is not None else "retry_at <= %s"
    sql = (f"UPDATE {model._meta.db_table} SET retry_at = %s, claimed = %s, woken = %s "
           f"WHERE {model._meta.pk.column} IN ({', '.join(['%s'] * len(pks))}) AND {condition} RETURNING {columns}")
    params = [db_datetime(claim_at), True, False, *(db_pk(model, pk) for pk in pks), db_datetime(seen if seen is not None else now)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [_instance(model, fields, row) for row in rows]


def unclaim(model, pks, token: dt.datetime, now: dt.datetime) -> int:
    """Give back rows a dispatcher claimed with ``token`` (its message could not be sent)."""
    marks = ", ".join(["%s"] * len(pks))
    sql = (f"UPDATE {model._meta.db_table} SET retry_at = %s, claimed = %s "
           f"WHERE {model._meta.pk.column} IN ({marks}) AND retry_at = %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [db_datetime(now), False, *(db_pk(model, pk) for pk in pks), db_datetime(token)])
        return cursor.rowcount


def wake(model, pks, now: dt.datetime) -> int:
    """Make rows due now, except rows a tick has claimed, which are marked woken instead."""
    marks = ", ".join(["%s"] * len(pks))
    sql = (f"UPDATE {model._meta.db_table} SET retry_at = CASE WHEN claimed THEN retry_at ELSE %s END, "
           f"woken = CASE WHEN claimed THEN %s ELSE woken END "
           f"WHERE {model._meta.pk.column} IN ({marks}) AND retry_at > %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [db_datetime(now), True, *(db_pk(model, pk) for pk in pks), db_datetime(now)])
        return cursor.rowcount


_LOOKUPS = {"": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "in": "IN"}


def update(model, values: dict, where: dict, retry_at: tuple[dt.datetime, dt.datetime | None] | None = None) -> int:
    """``UPDATE model SET values WHERE where`` without the ORM's query building; returns the row count.

    ``where`` keys are field names with an optional ``__lt``/``__lte``/``__gt``/``__gte``/``__in``.
    ``retry_at=(now, next)`` sets retry_at to ``next``, or to ``now`` if the row was woken meanwhile.
    """
    assignments, params = [], []
    for name, value in values.items():
        field = model._meta.get_field(name)
        assignments.append(f"{field.column} = %s")
        params.append(field.get_db_prep_save(value, connection))
    if retry_at is not None:
        now, following = retry_at
        if following is None:
            assignments.append("retry_at = NULL")
        else:
            assignments.append("retry_at = CASE WHEN woken THEN %s ELSE %s END")
            params += [db_datetime(now), db_datetime(following)]
    conditions = []
    for key, value in where.items():
        name, _, lookup = key.partition("__")
        field = model._meta.get_field(name)
        if lookup == "in":
            values_in = list(value)
            conditions.append(f"{field.column} IN ({', '.join(['%s'] * len(values_in))})")
            params += [field.get_db_prep_value(v, connection) for v in values_in]
        else:
            conditions.append(f"{field.column} {_LOOKUPS[lookup]} %s")
            params.append(field.get_db_prep_value(value, connection))
    sql = f"UPDATE {model._meta.db_table} SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def insert(obj) -> None:
    """``INSERT`` a new model instance as ``obj.save()`` would (its ``pre_save`` values, such
    as ``auto_now`` dates, included) without the save machinery; a unique conflict raises
    IntegrityError and leaves nothing behind."""
    model = type(obj)
    fields = _fields(model)
    params = [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields]
    sql = (f"INSERT INTO {model._meta.db_table} ({', '.join(f.column for f in fields)}) "
           f"VALUES ({', '.join(['%s'] * len(fields))})")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    obj._state.adding = False
    obj._state.db = connection.alias


def values(model, names: tuple[str, ...], where: dict, order_by: str = "") -> list[tuple]:
    """``SELECT names FROM model WHERE where``: converted values, without building a QuerySet."""
    fields = [model._meta.get_field(name) for name in names]
    conditions, params = [], []
    for key, value in where.items():
        field = model._meta.get_field(key)
        conditions.append(f"{field.column} = %s")
        params.append(field.get_db_prep_value(value, connection))
    order = f" ORDER BY {order_by}" if order_by else ""
    sql = f"SELECT {', '.join(f.column for f in fields)} FROM {model._meta.db_table} WHERE {' AND '.join(conditions)}{order}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [_convert(model, fields, row) for row in rows]


def load(model, pks, *relations: str) -> dict:
    """``{pk: instance}`` for the rows ``pks``, read in one statement, with the foreign keys
    ``relations`` loaded too (as :func:`attach` does, in the same statement)."""
    pks = list(dict.fromkeys(pks))
    if not pks:
        return {}
    fields = _fields(model)
    joins, columns, parts = _joins(model, relations)
    sql = (f"SELECT {', '.join([*(f'base.{f.column}' for f in fields), *columns])} FROM {model._meta.db_table} base "
           f"{' '.join(joins)} WHERE base.{model._meta.pk.column} IN ({', '.join(['%s'] * len(pks))})")
    with connection.cursor() as cursor:
        cursor.execute(sql, [db_pk(model, pk) for pk in pks])
        rows = cursor.fetchall()
    found = {}
    for row in rows:
        obj = _instance(model, fields, row[:len(fields)])
        _set_related(obj, parts, row, len(fields))
        found[obj.pk] = obj
    return found


def attach(objects: list, *relations: str) -> None:
    """Load the foreign keys ``relations`` of ``objects`` in one statement (a LEFT JOIN per
    relation) and set them on the objects (what select_related does, without building a
    QuerySet). A related model's ``lazy_fields`` (bulky columns its readers here do not
    need, such as a crawl's list of seed URLs) stay deferred: reading one loads it then."""
    if not objects or not relations:
        return
    model = type(objects[0])
    table, pk_column = model._meta.db_table, model._meta.pk.column
    joins, columns, parts = _joins(model, relations)
    by_pk = {obj.pk: obj for obj in objects}
    sql = (f"SELECT base.{pk_column}, {', '.join(columns)} FROM {table} base {' '.join(joins)} "
           f"WHERE base.{pk_column} IN ({', '.join(['%s'] * len(by_pk))})")
    with connection.cursor() as cursor:
        cursor.execute(sql, [db_pk(model, pk) for pk in by_pk])
        rows = cursor.fetchall()
    for row in rows:
        obj = by_pk.get(_convert(model, [model._meta.pk], row[:1])[0])
        if obj is not None:
            _set_related(obj, parts, row, 1)


def _joins(model, relations: tuple[str, ...]):
    """The LEFT JOINs (aliases r0, r1, ... on ``base``) and columns that read ``relations``."""
    joins, columns, parts = [], [], []
    for index, name in enumerate(relations):
        field = model._meta.get_field(name)
        related = field.related_model
        fields = [f for f in _fields(related) if f.name not in getattr(related, "lazy_fields", ())]
        alias = f"r{index}"
        joins.append(f"LEFT JOIN {related._meta.db_table} {alias} ON {alias}.{related._meta.pk.column} = base.{field.column}")
        columns += [f"{alias}.{f.column}" for f in fields]
        parts.append((name, related, fields))
    return joins, columns, parts


def _set_related(obj, parts, row, start: int) -> None:
    """Set the related objects read by :func:`_joins`' columns, from ``row[start:]``."""
    for name, related, fields in parts:
        values = row[start:start + len(fields)]
        start += len(fields)
        if values[fields.index(related._meta.pk)] is not None:
            setattr(obj, name, _instance(related, fields, values))


_CONVERTERS: dict = {}


def _fields(model):
    return [f for f in model._meta.concrete_fields]


def _converters(model, fields):
    key = (model, tuple(f.attname for f in fields), connection.vendor)
    converters = _CONVERTERS.get(key)
    if converters is None:
        converters = []
        for field in fields:
            expression = field.get_col(model._meta.db_table)
            converters.append((expression, connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)))
        _CONVERTERS[key] = converters
    return converters


def _convert(model, fields, row) -> tuple:
    converted = []
    for value, (expression, chain) in zip(row, _converters(model, fields)):
        for convert in chain:
            value = convert(value, expression, connection)
        converted.append(value)
    return tuple(converted)


def _instance(model, fields, row):
    """Build a model instance from raw column values, converted as the ORM would."""
    return model.from_db(connection.alias, [f.attname for f in fields], list(_convert(model, fields, row)))
