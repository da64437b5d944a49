"""The repository's statements, built once per table, dialect and shape, then run with parameters.

Building ``insert(table).values(row)`` or ``select(table).where(column == value)`` anew for each
call made SQLAlchemy construct a fresh statement and compute its cache key, value by value,
before finding the compiled SQL in its cache: about a third of the CPU time of a request on
the SQL store (profiled in ``docs/performance.md``). Here a statement is built once per table
and *shape* (which fields are filtered, which of them are ``NULL``, the lock, the limit, the
cursor), with bound parameters in place of the values, compiled once for the engine's dialect
and run on the driver (:mod:`refcore_sqlstore.driver`); each call only passes its values.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Dialect, Select, Table, bindparam, insert, select, update
from sqlalchemy.sql.elements import ColumnElement

from refcore_sqlstore.driver import DriverStatement
from refcore_sqlstore.mapping import db_value

#: A filter's shape: each field in the order given, and whether it is compared with ``NULL``.
Shape = tuple[tuple[str, bool], ...]

_ID = "refcore_id"
_BEFORE = "refcore_before"
#: Rows in one multi-row ``INSERT`` at most (see :meth:`TableStatements.add_rows`), and the
#: parameters: 999 is the least any SQLite build allows in one statement.
_MAX_ROWS_A_STATEMENT = 64
_MAX_PARAMETERS = 999


def _param(column: str) -> str:
    return f"refcore_w_{column}"


class TableStatements:
    """The statements of one table, for one dialect."""

    def __init__(self, table: Table, dialect: Dialect) -> None:
        self.table = table
        self._dialect = dialect
        self._cache: dict[tuple[Any, ...], DriverStatement] = {}
        self.insert = DriverStatement(insert(table), dialect, column_keys=list(table.columns.keys()))
        self._columns = tuple(table.columns.keys())
        #: The most rows one multi-row insert takes: a power of two, so that any batch is sent
        #: by a few statements of a few sizes (each prepared once and kept by the driver).
        most = min(_MAX_ROWS_A_STATEMENT, _MAX_PARAMETERS // len(self._columns))
        self._most_rows = 1 << (most.bit_length() - 1) if most else 1

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

    def _cached(self, key: tuple[Any, ...], build: Callable[[], DriverStatement]) -> DriverStatement:
        statement = self._cache.get(key)
        if statement is None:
            statement = self._cache.setdefault(key, build())
        return statement

    def _compiled(self, statement: Select[Any], *, for_update: bool = False) -> DriverStatement:
        """``for_update`` locks the rows ``FOR NO KEY UPDATE`` on PostgreSQL (SQLite has no row
        locks): it stops other updates and locks of the row as ``FOR UPDATE`` does, but not the
        ``FOR KEY SHARE`` lock a foreign key check takes at ``COMMIT``, so the writes that only
        reference a locked row (every payment of an App whose first Live payment holds the App's
        row) neither wait for it nor deadlock with it. No service changes a row's ``id`` or
        deletes a row it locked, the only changes that lock would have to stop."""
        locked = statement.with_for_update(key_share=True) if for_update else statement
        return DriverStatement(locked, self._dialect)

    def by_id(self, *, for_update: bool) -> DriverStatement:
        def build() -> DriverStatement:
            id_column = self.table.c.id
            statement = select(self.table).where(id_column == bindparam(_ID, type_=id_column.type))
            return self._compiled(statement, for_update=for_update)

        return self._cached(("get", for_update), build)

    def one(self, shape: Shape, *, for_update: bool) -> DriverStatement:
        return self._cached(
            ("one", shape, for_update),
            lambda: self._compiled(self._filtered(shape).limit(1), for_update=for_update),
        )

    def all(self, shape: Shape) -> DriverStatement:
        return self._cached(
            ("all", shape), lambda: self._compiled(self._filtered(shape).order_by(self.table.c.id))
        )

    def page(self, shape: Shape, *, limit: int, before: bool) -> DriverStatement:
        def build() -> DriverStatement:
            statement = self._filtered(shape)
            if before:
                statement = statement.where(self.table.c.id < bindparam(_BEFORE, type_=self.table.c.id.type))
            return self._compiled(statement.order_by(self.table.c.id.desc()).limit(limit))

        return self._cached(("page", shape, limit, before), build)

    def update_by_id(self, columns: Iterable[str]) -> DriverStatement:
        """``UPDATE … SET`` the given columns ``WHERE id = :refcore_id``."""
        keys = tuple(sorted(columns))

        def build() -> DriverStatement:
            statement = update(self.table).where(self.table.c.id == bindparam(_ID))
            return DriverStatement(statement, self._dialect, column_keys=[*keys, _ID])

        return self._cached(("update", keys), build)

    def update_where(self, shape: Shape, columns: Iterable[str]) -> DriverStatement:
        """``UPDATE … SET`` the given columns (parameters named after them) on every row the
        filter of ``shape`` matches (parameters as :meth:`params` names them)."""
        keys = tuple(sorted(columns))

        def build() -> DriverStatement:
            clauses = self._filtered(shape).whereclause
            statement = update(self.table)
            if clauses is not None:
                statement = statement.where(clauses)
            wheres = [_param(column) for column, is_null in shape if not is_null]
            return DriverStatement(statement, self._dialect, column_keys=[*keys, *wheres])

        return self._cached(("update_where", shape, keys), build)

    def add_rows(self, connection: Connection, columns: tuple[str, ...], rows: Sequence[list[Any]]) -> None:
        """Insert rows given as lists of values in the order of ``columns`` (a batch of clicks).

        Where the driver takes parameters by position (SQLite) and ``columns`` are the table's
        own, in order, the rows go by multi-row ``INSERT``s, the batch split into runs of a
        power of two (32 rows: one statement; 31: five). SQLite then inserts the run in one
        step of one statement, where ``executemany`` binds, steps and resets the statement
        row by row: 12.9 against 10.4 µs of CPU a click, batches of 32 straight through
        ``sqlite3`` (``bench/history.md``, twenty-fifth session). Otherwise one
        ``executemany``, each row by name."""
        if not (self.insert.takes_values and columns == self._columns):
            self.insert.send_many(connection, [dict(zip(columns, values, strict=True)) for values in rows])
            return
        start = 0
        while start < len(rows):
            count = min(self._most_rows, 1 << ((len(rows) - start).bit_length() - 1))
            values = [value for row in rows[start : start + count] for value in row]
            self._insert_of(count).send_values(connection, values)
            start += count

    def _insert_of(self, count: int) -> DriverStatement:
        """``INSERT`` of ``count`` whole rows, its parameters row after row in column order."""

        def build() -> DriverStatement:
            columns = self.table.columns
            rows = [
                {
                    name: bindparam(f"{name}_r{n}", type_=column.type, required=True)
                    for name, column in columns.items()
                }
                for n in range(count)
            ]
            statement = DriverStatement(insert(self.table).values(rows), self._dialect)
            if statement.names != tuple(f"{name}_r{n}" for n in range(count) for name in self._columns):
                raise RuntimeError(
                    f"{self.table.name}: a multi-row insert's parameters are not row after row"
                )
            return statement

        return self._cached(("insert", count), build)

    @staticmethod
    def id_param(id: str) -> dict[str, Any]:
        return {_ID: id}

    @staticmethod
    def before_param(before: str) -> dict[str, Any]:
        return {_BEFORE: before}


#: Per dialect (one per engine), the statements of each table; a disposed engine's go with it.
_BY_DIALECT: weakref.WeakKeyDictionary[Dialect, dict[str, TableStatements]] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def statements_of(table: Table, dialect: Dialect) -> TableStatements:
    tables = _BY_DIALECT.get(dialect)
    found = tables.get(table.name) if tables is not None else None
    if found is None or found.table is not table:
        with _GUARD:
            found = _BY_DIALECT.setdefault(dialect, {})[table.name] = TableStatements(table, dialect)
    return found
