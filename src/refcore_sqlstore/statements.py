"""The repository's statements, built once per table and shape, then run with parameters.

Building ``insert(table).values(row)`` or ``select(table).where(column == value)`` anew for each
call made SQLAlchemy construct a fresh statement and compute its cache key, value by value,
before finding the compiled SQL in its cache: about a third of the CPU time of a request on
the SQL store (profiled in ``docs/performance.md``). Here a statement is built once per table
and *shape* (which fields are filtered, which of them are ``NULL``, the lock, the limit, the
cursor), with bound parameters in place of the values, and reused; each call only passes its
values. The SQL sent to the database is the same as before, so every query plan is too.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Insert, Select, Table, Update, bindparam, insert, select, update
from sqlalchemy.sql.elements import ColumnElement

from refcore_sqlstore.mapping import db_value

#: A filter's shape: each field in the order given, and whether it is compared with ``NULL``.
Shape = tuple[tuple[str, bool], ...]

_ID = "refcore_id"
_BEFORE = "refcore_before"


def _param(column: str) -> str:
    return f"refcore_w_{column}"


class TableStatements:
    def __init__(self, table: Table) -> None:
        self.table = table
        self.insert: Insert = insert(table)
        self.update_by_id: Update = update(table).where(table.c.id == bindparam(_ID))
        self._cache: dict[tuple[Any, ...], Select[Any]] = {}

    @staticmethod
    def shape(where: Mapping[str, object]) -> Shape:
        return tuple((column, value is None) for column, value in where.items())

    @staticmethod
    def params(where: Mapping[str, object]) -> dict[str, Any]:
        return {_param(column): db_value(value) for column, value in where.items() if value is not None}

    def _filtered(self, shape: Shape) -> Select[Any]:
        clauses: list[ColumnElement[bool]] = []
        for column, is_null in shape:
            c = self.table.c[column]
            clauses.append(c.is_(None) if is_null else c == bindparam(_param(column), type_=c.type))
        return select(self.table).where(*clauses)

    def _cached(self, key: tuple[Any, ...], build: Any) -> Select[Any]:
        statement = self._cache.get(key)
        if statement is None:
            statement = self._cache.setdefault(key, build())
        return statement

    def by_id(self, *, for_update: bool) -> Select[Any]:
        def build() -> Select[Any]:
            id_column = self.table.c.id
            statement = select(self.table).where(id_column == bindparam(_ID, type_=id_column.type))
            return statement.with_for_update() if for_update else statement

        return self._cached(("get", for_update), build)

    def one(self, shape: Shape, *, for_update: bool) -> Select[Any]:
        def build() -> Select[Any]:
            statement = self._filtered(shape).limit(1)
            return statement.with_for_update() if for_update else statement

        return self._cached(("one", shape, for_update), build)

    def all(self, shape: Shape) -> Select[Any]:
        return self._cached(("all", shape), lambda: self._filtered(shape).order_by(self.table.c.id))

    def page(self, shape: Shape, *, limit: int, before: bool) -> Select[Any]:
        def build() -> Select[Any]:
            statement = self._filtered(shape)
            if before:
                statement = statement.where(self.table.c.id < bindparam(_BEFORE, type_=self.table.c.id.type))
            return statement.order_by(self.table.c.id.desc()).limit(limit)

        return self._cached(("page", shape, limit, before), build)

    @staticmethod
    def id_param(id: str) -> dict[str, Any]:
        return {_ID: id}

    @staticmethod
    def before_param(before: str) -> dict[str, Any]:
        return {_BEFORE: before}


_BY_TABLE: dict[str, TableStatements] = {}
_GUARD = threading.Lock()


def statements_of(table: Table) -> TableStatements:
    found = _BY_TABLE.get(table.name)
    if found is None or found.table is not table:
        with _GUARD:
            found = _BY_TABLE[table.name] = TableStatements(table)
    return found
