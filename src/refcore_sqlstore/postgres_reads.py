"""PostgreSQL's read units of work: each statement on its own, no transaction around them.

At ``READ COMMITTED``, the isolation refcore runs at, every statement of a transaction already
sees its own snapshot: what was committed when it started. A read unit of work's ``BEGIN`` and
``COMMIT`` therefore bought its statements nothing but two round trips, and every keyed request
authenticates in one. So a read unit of work begins no transaction (the driver runs in
autocommit, and refcore sends each transaction's ``BEGIN`` itself,
:mod:`refcore_sqlstore.postgres_round_trips`): what each statement sees is exactly what it saw
inside the transaction, and a key lookup is one round trip instead of three.

- **Prepared statements survive.** psycopg prepares a statement on a connection once it has run
  it a few times, and forgets them all whenever the connection rolls back. Nothing rolls back
  here: there is no transaction to end. (Before this, a read ended in ``COMMIT`` for the same
  reason: ending in ``ROLLBACK`` had left every statement of refcore unprepared and PostgreSQL
  planning a balance's sums on every call, 0.74 ms, ``bench/history.md``.)
- **Writes are refused by the repositories** (``read_only``): without a ``READ ONLY``
  transaction PostgreSQL would commit an ``UPDATE`` at once. An insert is never sent either.
- A balance's sums need a setting for their one statement (``ledger._generic_plan``); outside a
  transaction it is set for the session and put back right after them.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from refcore_sqlstore import postgres_round_trips
from refcore_sqlstore.unit_of_work import SqlUnitOfWork


class PostgresReadUnitOfWork(SqlUnitOfWork):
    """Implements :class:`refcore.ports.UnitOfWork` for ``Runtime.read`` on PostgreSQL."""

    read_only = True
    begins_read_only = True


class PostgresSnapshotUnitOfWork(PostgresReadUnitOfWork):
    """Implements :class:`refcore.ports.UnitOfWork` for ``Runtime.read(snapshot=True)``: one
    ``REPEATABLE READ READ ONLY`` transaction, so that every statement sees the database as of
    the first (as every read does on SQLite), for an answer whose figures several statements
    read and must agree: an overview's totals had each been counted at its own moment.

    Its ``BEGIN`` goes with the first statement (:func:`postgres_round_trips.begin_snapshot`)
    and it ends in ``COMMIT``, which keeps the connection's prepared statements (a rollback
    would drop them, see above): one round trip more than a read of each statement on its own.
    A read-only transaction at this level never fails for a concurrent write."""

    def __enter__(self) -> Self:
        super().__enter__()
        postgres_round_trips.begin_snapshot(self._require_connection())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is None and self._connection is not None:
                self.commit()
        finally:
            super().__exit__(exc_type, exc, tb)
