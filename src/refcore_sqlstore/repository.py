"""``Repository[M]`` over one SQL table, inside the connection of one unit of work.

Writes run inside the unit of work's transaction, so nobody else sees them before commit. On
PostgreSQL an insert, and an update of a row the unit of work locked, leave with its next
statement or its ``COMMIT`` (:mod:`refcore_sqlstore.postgres_round_trips`): a unique key already
taken surfaces there, as :class:`refcore.errors.ConcurrentWrite`, still inside the unit of work;
elsewhere at the ``add`` that takes it. Queries are equality filters ordered by ``id``; every
one the services run is backed by an index ending in ``id`` (see :mod:`refcore_sqlstore.tables`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection

from refcore.errors import InternalError
from refcore_sqlstore.driver import DriverStatement
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.mapping import RowMapper, db_value
from refcore_sqlstore.statements import TableStatements, statements_of

M = TypeVar("M")


class SqlRepository(Generic[M]):
    """Implements :class:`refcore.ports.Repository` for one model.

    ``for_update`` becomes ``SELECT … FOR NO KEY UPDATE`` (a row lock until the unit of work
    ends, which lets foreign key checks of rows referencing it through) on PostgreSQL. SQLite has
    no row locks and needs none: every unit of work there holds the database's write lock from
    ``BEGIN IMMEDIATE`` on, so writers already run one at a time.
    """

    def __init__(
        self,
        connection: Connection,
        mapper: RowMapper[M],
        *,
        append_only: bool = False,
        read_only: bool = False,
    ) -> None:
        self._connection = connection
        self._mapper = mapper
        self._table = mapper.table
        self._append_only = append_only
        #: Writes raise ``InternalError``: the repository of a read unit of work.
        self._read_only = read_only
        #: Statements built once per table, dialect and shape, run on the driver (see statements).
        self._statements = statements_of(mapper.table, connection.dialect)
        #: The row of each record this unit of work read by ``get``/``find_one``, as the
        #: database holds it now: ``replace`` then sets only the columns that changed.
        self._rows: dict[str, Mapping[Any, Any]] = {}
        #: The rows this unit of work read ``for_update``, each with the transaction that holds
        #: its lock: a commit or rollback ends the lock, and a later transaction has its own.
        self._locked: dict[str, object] = {}

    # -- reads -----------------------------------------------------------------------------

    def _columns(self, where: Mapping[str, object]) -> dict[str, object]:
        return {self._mapper.column(field): value for field, value in where.items()}

    def _fetch(self, statement: DriverStatement, params: Mapping[str, Any]) -> list[M]:
        """The models of a list read: its statement selects the whole table, so each row comes
        as values in the table's column order (no dictionary per row; see ``from_columns``)."""
        with database_errors():
            rows = statement.fetch_tuples(self._connection, params)
        return [self._mapper.from_columns(row) for row in rows]

    def _fetch_one(self, statement: DriverStatement, params: Mapping[str, Any], *, locks: bool) -> M | None:
        with database_errors():
            rows = statement.fetch(self._connection, params)
        if not rows:
            return None
        stored = rows[0]
        self._rows[stored["id"]] = stored
        if locks:
            self._locked[stored["id"]] = self._connection.get_transaction()
        return self._mapper.from_row(stored)

    def get(self, id: str, *, for_update: bool = False) -> M | None:
        if not isinstance(id, str):
            return None  # every ID is text: a library caller's list or number names no record
        statement = self._statements.by_id(for_update=for_update)
        return self._fetch_one(statement, TableStatements.id_param(id), locks=for_update)

    def find_one(self, where: Mapping[str, object], *, for_update: bool = False) -> M | None:
        # No ORDER BY: the port promises a single match, and sorting would keep the database
        # from answering a unique lookup straight from its index.
        columns = self._columns(where)
        statement = self._statements.one(TableStatements.shape(columns), for_update=for_update)
        return self._fetch_one(statement, TableStatements.params(columns), locks=for_update)

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

    def _require_writable(self) -> None:
        if self._read_only:
            raise InternalError(f"A read unit of work cannot write to {self._table.name}")

    def add(self, item: M) -> None:
        self._require_writable()
        with database_errors():
            self._statements.insert.send(self._connection, self._mapper.to_row(item))

    def add_all(self, items: Sequence[M]) -> None:
        """All in a few statements (:meth:`~refcore_sqlstore.statements.TableStatements.add_rows`)."""
        self._require_writable()
        if not items:
            return
        rows = [self._mapper.to_values(item) for item in items]
        with database_errors():
            self._statements.add_rows(self._connection, self._mapper.written_columns, rows)

    def replace(self, item: M) -> None:
        """Write ``item`` over its row. When this unit of work read the row, only the columns
        that differ are set (the rest already hold these values in this transaction): closing
        an event then writes ``delivered_at`` alone instead of re-encoding its JSON payload.

        A row the current transaction locked (``for_update``) is there until that transaction
        ends, so its ``UPDATE`` is sent like an insert, its row count unread: on PostgreSQL with the next
        statement or the ``COMMIT``, joined with the writes around it
        (:mod:`refcore_sqlstore.joined_writes`); a refund's update of its payment then costs
        no round trip of its own."""
        if self._append_only:
            raise TypeError(f"{self._table.name} is append-only")
        self._require_writable()
        row = self._mapper.to_row(item)
        id = row.pop("id")
        before = self._rows.get(id)
        values = row
        if before is not None:
            changed = {
                column: value for column, value in row.items() if not _same(before[column], db_value(value))
            }
            # Nothing changed: the full row, as before (the UPDATE still locks and checks the row).
            values = changed or row
        statement = self._statements.update_by_id(values)
        params = {**values, **TableStatements.id_param(id)}
        matched = 1
        with database_errors():
            if self._holds_lock(id):
                statement.send(self._connection, params)
            else:
                matched = statement.execute(self._connection, params)
        if matched == 0:
            raise KeyError(id)
        if before is not None:
            self._rows[id] = {**before, **row}

    def update_where(self, where: Mapping[str, object], changes: Mapping[str, object]) -> int:
        """One ``UPDATE`` of every matching row. The rows this unit of work read are forgotten,
        since some of them may have changed: a later ``replace`` then writes its whole row."""
        if self._append_only:
            raise TypeError(f"{self._table.name} is append-only")
        self._require_writable()
        columns = self._columns(where)
        values = {self._mapper.column(field): db_value(value) for field, value in changes.items()}
        statement = self._statements.update_where(TableStatements.shape(columns), values)
        with database_errors():
            matched = statement.execute(self._connection, {**values, **TableStatements.params(columns)})
        self._rows.clear()
        return matched

    def _holds_lock(self, id: str) -> bool:
        """Whether this unit of work's current transaction locked the row of ``id``."""
        transaction = self._connection.get_transaction()
        return transaction is not None and self._locked.get(id) is transaction


def _same(stored: object, value: object) -> bool:
    """Whether a column already holds ``value``: equal and of the same type, all the way into
    JSON values (``1`` is not ``True``, a list is not a tuple), so a doubtful case is written,
    never skipped."""
    if type(stored) is not type(value):
        return False
    if isinstance(stored, dict):
        assert isinstance(value, dict)
        return stored.keys() == value.keys() and all(_same(stored[key], value[key]) for key in stored)
    if isinstance(stored, list | tuple):
        assert isinstance(value, list | tuple)
        return len(stored) == len(value) and all(map(_same, stored, value))
    return stored == value
