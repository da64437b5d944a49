"""``Repository[M]`` over one SQL table, inside the connection of one unit of work.

Writes are executed at once (inside the unit of work's transaction, so nobody else sees them
before commit): a unique key already taken surfaces at the ``add`` that takes it, as
:class:`refcore.errors.ConcurrentWrite`. Queries are equality filters ordered by ``id``; every
one the services run is backed by an index ending in ``id`` (see :mod:`refcore_sqlstore.tables`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, Connection, Select, insert, select, update

from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.mapping import RowMapper, db_value

M = TypeVar("M")


class SqlRepository(Generic[M]):
    """Implements :class:`refcore.ports.Repository` for one model.

    ``for_update`` becomes ``SELECT … FOR UPDATE`` (a row lock until the unit of work ends) on
    PostgreSQL. SQLite has no row locks and needs none: every unit of work there holds the
    database's write lock from ``BEGIN IMMEDIATE`` on, so writers already run one at a time.
    """

    def __init__(self, connection: Connection, mapper: RowMapper[M], *, append_only: bool = False) -> None:
        self._connection = connection
        self._mapper = mapper
        self._table = mapper.table
        self._append_only = append_only

    # -- reads -----------------------------------------------------------------------------

    def _where(self, where: Mapping[str, object]) -> list[ColumnElement[bool]]:
        clauses: list[ColumnElement[bool]] = []
        for field, value in where.items():
            column = self._table.c[self._mapper.column(field)]
            clauses.append(column.is_(None) if value is None else column == db_value(value))
        return clauses

    def _select(self, where: Mapping[str, object]) -> Select[Any]:
        return select(self._table).where(*self._where(where))

    def _fetch(self, statement: Select[Any]) -> list[M]:
        with database_errors():
            rows = self._connection.execute(statement).mappings().all()
        return [self._mapper.from_row(row) for row in rows]

    def get(self, id: str, *, for_update: bool = False) -> M | None:
        statement = select(self._table).where(self._table.c.id == id)
        if for_update:
            statement = statement.with_for_update()
        found = self._fetch(statement)
        return found[0] if found else None

    def find_one(self, where: Mapping[str, object], *, for_update: bool = False) -> M | None:
        # No ORDER BY: the port promises a single match, and sorting would keep the database
        # from answering a unique lookup straight from its index.
        statement = self._select(where).limit(1)
        if for_update:
            statement = statement.with_for_update()
        found = self._fetch(statement)
        return found[0] if found else None

    def find_all(self, where: Mapping[str, object]) -> list[M]:
        return self._fetch(self._select(where).order_by(self._table.c.id))

    def page(self, where: Mapping[str, object], *, limit: int, before: str | None) -> list[M]:
        statement = self._select(where)
        if before is not None:
            statement = statement.where(self._table.c.id < before)
        return self._fetch(statement.order_by(self._table.c.id.desc()).limit(limit))

    # -- writes ----------------------------------------------------------------------------

    def add(self, item: M) -> None:
        with database_errors():
            self._connection.execute(insert(self._table).values(self._mapper.to_row(item)))

    def replace(self, item: M) -> None:
        if self._append_only:
            raise TypeError(f"{self._table.name} is append-only")
        row = self._mapper.to_row(item)
        id = row.pop("id")
        with database_errors():
            result = self._connection.execute(update(self._table).where(self._table.c.id == id).values(row))
        if result.rowcount == 0:
            raise KeyError(id)
