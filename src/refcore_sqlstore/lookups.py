""":meth:`UnitOfWork.look_up` on SQL: every lookup of a call in one ``SELECT``.

The statement starts from a single-row ``(SELECT 1)`` and ``LEFT OUTER JOIN``s one alias of
each lookup's table on its filter, so it always returns one row, holding each found record's
columns (all ``NULL`` for a lookup that found nothing; every table's ``id`` is ``NOT NULL``, so
a ``NULL`` ``id`` tells the two apart). A :class:`~refcore.ports.lookups.FieldOf` becomes a
join condition on the earlier alias's column, which matches no row when that column is
``NULL``: the port's rule. Each filter is on a key the services already look records up by, so
each join is one index lookup, as each ``find_one`` was.

A payment's six reads became one statement: on PostgreSQL five round trips fewer, on both
stores five fewer calls into the driver (``bench/history.md``, seventeenth session).

Statements are built once per *shape* (which tables, which fields, which of them are ``NULL``
or refer to an earlier lookup) and dialect, like the repositories' (:mod:`.statements`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen
from sqlalchemy import Connection, Dialect, FromClause, and_, bindparam, literal_column, select
from sqlalchemy.sql.elements import ColumnElement

from refcore.ports.lookups import FieldOf, Found, Lookup, check_order
from refcore_sqlstore.driver import DriverStatement
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.mapping import RowMapper, db_value

#: Per filtered field: ``("value",)``, ``("null",)``, or ``("field", earlier position, column)``.
_Filter = tuple[str, tuple[Any, ...]]
#: Per lookup: its repository and its filters, in order.
Shape = tuple[tuple[str, tuple[_Filter, ...]], ...]


#: The single-row subquery every lookup statement starts from.
BASE = "refcore_one"


def _param(position: int, column: str) -> str:
    return f"refcore_l{position}_{column}"


def shape_and_params(
    lookups: Sequence[Lookup[Any]], mappers: Mapping[str, RowMapper[Any]]
) -> tuple[Shape, dict[str, Any]]:
    """What the statement depends on (not the values, only where they go), and the values."""
    positions = {id(lookup): position for position, lookup in enumerate(lookups)}
    shape = []
    params: dict[str, Any] = {}
    for position, lookup in enumerate(lookups):
        mapper = mappers[lookup.repository]
        filters: list[_Filter] = []
        for field, value in lookup.where.items():
            column = mapper.column(field)
            if isinstance(value, FieldOf):
                source = mappers[value.lookup.repository].column(value.field)
                filters.append((column, ("field", positions[id(value.lookup)], source)))
            elif value is None:
                filters.append((column, ("null",)))
            else:
                filters.append((column, ("value",)))
                params[_param(position, column)] = db_value(value)
        shape.append((lookup.repository, tuple(filters)))
    return tuple(shape), params


@frozen
class _Plan:
    """A shape's statement, and where each lookup's record lies in its row: the slice of its
    columns and, within it, the position of its ``id`` (``NULL`` when nothing was found)."""

    statement: DriverStatement
    parts: tuple[tuple[int, int, int], ...]


def _plan(shape: Shape, mappers: Mapping[str, RowMapper[Any]], dialect: Dialect) -> _Plan:
    """The one-row ``SELECT`` of a shape: each lookup's columns in its table's order."""
    joined: FromClause = select(literal_column("1").label("one")).subquery(BASE)
    aliases: list[FromClause] = []
    parts: list[tuple[int, int, int]] = []
    start = 0
    for position, (repository, filters) in enumerate(shape):
        mapper = mappers[repository]
        alias = mapper.table.alias(f"refcore_l{position}")
        conditions: list[ColumnElement[bool]] = []
        for column, (kind, *refers) in filters:
            own = alias.c[column]
            if kind == "field":
                earlier, source = refers
                conditions.append(own == aliases[earlier].c[source])
            elif kind == "null":
                conditions.append(own.is_(None))
            else:
                conditions.append(own == bindparam(_param(position, column), type_=own.type))
        joined = joined.outerjoin(alias, and_(*conditions))
        aliases.append(alias)
        parts.append((start, start + len(mapper.columns), mapper.columns.index("id")))
        start += len(mapper.columns)
    columns = [column for alias in aliases for column in alias.c]
    return _Plan(DriverStatement(select(*columns).select_from(joined), dialect), tuple(parts))


#: Per dialect (one per engine), the plan of each shape built so far.
_BY_DIALECT: weakref.WeakKeyDictionary[Dialect, dict[Shape, _Plan]] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def plan_of(shape: Shape, mappers: Mapping[str, RowMapper[Any]], dialect: Dialect) -> _Plan:
    plans = _BY_DIALECT.get(dialect)
    found = plans.get(shape) if plans is not None else None
    if found is None:
        with _GUARD:
            plans = _BY_DIALECT.setdefault(dialect, {})
            found = plans.get(shape)
            if found is None:
                found = plans[shape] = _plan(shape, mappers, dialect)
    return found


def look_up(
    connection: Connection, lookups: tuple[Lookup[Any], ...], mappers: Mapping[str, RowMapper[Any]]
) -> Found:
    """Run the lookups' statement and split its row into one model (or ``None``) each."""
    check_order(lookups)
    if not lookups:
        return Found({})
    shape, params = shape_and_params(lookups, mappers)
    plan = plan_of(shape, mappers, connection.dialect)
    with database_errors():
        rows = plan.statement.fetch_tuples(connection, params)
    # One row, or more when a lookup matched several records (the port promises it will not;
    # any one of them then stands for it, as with ``find_one``).
    row = rows[0]
    found: dict[Lookup[Any], object | None] = {}
    for lookup, (start, end, id_position) in zip(lookups, plan.parts, strict=True):
        values = row[start:end]
        mapper = mappers[lookup.repository]
        found[lookup] = None if values[id_position] is None else mapper.from_columns(values)
    return Found(found)
