"""``Repository[M]`` over one SQL table, inside the connection of one unit of work.

Writes are executed at once (inside the unit of work's transaction, so nobody else sees them
before commit): a unique key already taken surfaces at the ``add`` that takes it, as
:class:`refcore.errors.ConcurrentWrite`. Queries are equality filters ordered by ``id``; every
one the services run is backed by an index ending in ``id`` (see :mod:`refcore_sqlstore.tables`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Select

from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.mapping import RowMapper
from refcore_sqlstore.statements import TableStatements, statements_of

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
        #: Statements built once per table and shape, run with parameters (see statements).
        self._statements = statements_of(mapper.table)

    # -- reads -----------------------------------------------------------------------------

    def _columns(self, where: Mapping[str, object]) -> dict[str, object]:
        return {self._mapper.column(field): value for field, value in where.items()}

    def _fetch(self, statement: Select[Any], params: Mapping[str, Any]) -> list[M]:
        with database_errors():
            rows = self._connection.execute(statement, dict(params)).mappings().all()
        return [self._mapper.from_row(row) for row in rows]

    def get(self, id: str, *, for_update: bool = False) -> M | None:
        found = self._fetch(self._statements.by_id(for_update=for_update), TableStatements.id_param(id))
        return found[0] if found else None

    def find_one(self, where: Mapping[str, object], *, for_update: bool = False) -> M | None:
        # No ORDER BY: the port promises a single match, and sorting would keep the database
        # from answering a unique lookup straight from its index.
        columns = self._columns(where)
        statement = self._statements.one(TableStatements.shape(columns), for_update=for_update)
        found = self._fetch(statement, TableStatements.params(columns))
        return found[0] if found else None

    def find_all(self, where: Mapping[str, object]) -> list[M]:
        columns = self._columns(where)
        statement = self._statements.all(TableStatements.shape(columns))
        return self._fetch(statement, TableStatements.params(columns))

    def page(self, where: Mapping[str, object], *, limit: int, before: str | None) -> list[M]:
        columns = self._columns(where)
        params = TableStatements.params(columns)
        if before is not None:
            params.update(TableStatements.before_param(before))
        shape = TableStatements.shape(columns)
        statement = self._statements.page(shape, limit=limit, before=before is not None)
        return self._fetch(statement, params)

    # -- writes ----------------------------------------------------------------------------

    def add(self, item: M) -> None:
        with database_errors():
            self._connection.execute(self._statements.insert, self._mapper.to_row(item))

    def replace(self, item: M) -> None:
        if self._append_only:
            raise TypeError(f"{self._table.name} is append-only")
        row = self._mapper.to_row(item)
        id = row.pop("id")
        with database_errors():
            result = self._connection.execute(
                self._statements.update_by_id, {**row, **TableStatements.id_param(id)}
            )
        if result.rowcount == 0:
            raise KeyError(id)
