"""PostgreSQL's read units of work: a ``READ ONLY`` transaction that ends in ``COMMIT``.

psycopg prepares a statement on a connection once it has run it a few times, so PostgreSQL
stops planning it on every call. But it forgets every statement it prepared on a connection
whenever that connection rolls back (it cannot know whether the transaction dropped something
a statement names). A read unit of work used to end that way: leaving it closed the connection,
which rolled back. Every authentication is one, so no statement refcore runs was ever prepared,
writes included, and PostgreSQL planned each one every time: 0.74 ms for a payout balance's
sums, more than executing them (``bench/notes.md``).

A transaction that wrote nothing ends the same with ``COMMIT`` as with ``ROLLBACK``, and
``COMMIT`` keeps the prepared statements. ``READ ONLY`` (SQLAlchemy's ``postgresql_readonly``,
reset when the connection goes back to the pool) makes PostgreSQL refuse any write, so a read
unit of work can never commit one. A read that fails still rolls back.
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy import Connection

from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.unit_of_work import SqlUnitOfWork


class PostgresReadUnitOfWork(SqlUnitOfWork):
    """Implements :class:`refcore.ports.UnitOfWork` for ``Runtime.read`` on PostgreSQL."""

    def _connect(self) -> Connection:
        return self._engine.connect().execution_options(postgresql_readonly=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is None and self._connection is not None:
                with database_errors():
                    self._connection.commit()  # a deferred write refused here must not leak it
        finally:
            super().__exit__(exc_type, exc, tb)
