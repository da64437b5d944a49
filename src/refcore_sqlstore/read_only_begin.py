"""Whether the transaction beginning now is a read unit of work's.

Each database's ``begin`` listener asks it: SQLite begins a read *deferred* (a WAL snapshot that
takes no lock, :mod:`refcore_sqlstore.engine`) and every other transaction ``IMMEDIATE``;
PostgreSQL sends a read no ``BEGIN`` at all (its statements run in autocommit,
:mod:`refcore_sqlstore.postgres_round_trips`). A unit of work sets it while it begins
(:attr:`refcore_sqlstore.unit_of_work.SqlUnitOfWork.begins_read_only`): the listener is handed
only the connection, not the unit of work.
"""

from __future__ import annotations

from contextvars import ContextVar

READ_ONLY_BEGIN: ContextVar[bool] = ContextVar("refcore_read_only_begin", default=False)
