"""Connections kept checked out between units of work, so that none pays for the pool.

Taking a connection from SQLAlchemy's pool and giving it back (its checkout and checkin
events, its reset, the pool's lock) and beginning a transaction on a new ``Connection`` cost
more than a unit of work's statements often do:

- on SQLite, a read unit of work cost 234 K instructions before its first statement, about as
  much as a payment's six ``SELECT``\\s together; a kept connection begins and rolls back for 58 K
  (``bench/history.md``, seventh session). Every keyed request authenticates in a read;
- on PostgreSQL, where every unit of work (reads and writes alike) takes one, a payment,
  identify or refund cost 5 to 8 % fewer instructions on kept connections (thirty-first session).

So the store keeps up to ``keep`` idle connections, each still checked out of the pool: a unit
of work takes one (or a new one from the pool when none is idle), and gives it back with its
transaction ended. A connection that was invalidated, or whose rollback failed, is closed
instead, and the pool replaces it as usual. On PostgreSQL two checks stand in for what the pool
did: when a connection is taken, :func:`~refcore_sqlstore.postgres_round_trips.still_open` (the
pool's own liveness check at checkout: a server that closed the connection while it was idle);
when it is given back, :func:`~refcore_sqlstore.postgres_round_trips.outside_transaction` (a
transaction still open on the server, which the pool's checkin would end). A connection that
fails either goes back to the pool, invalidated when it is closed. SQLite's writers keep a
connection of their own (:mod:`refcore_sqlstore.group_commit`); only its reads come here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from sqlalchemy import Connection, Engine

#: Idle connections kept at most: one per worker thread of the server by default.
KEEP_IDLE = 8

#: A check of a kept connection: whether it may serve a unit of work, or be kept once given back.
Check = Callable[[Connection], bool]


def idle_connections_for(pool_size: int) -> int:
    """How many idle connections a pool of ``pool_size`` can spare: they stay checked out, so
    they must leave two connections free (SQLite's group commit writer, the webhook outbox's and
    the pruning's transactions, which take theirs from the pool), or a small pool
    (``REFCORE_DB_POOL_SIZE=3`` with no overflow) would keep every connection idle while a
    write waited for one."""
    return max(0, min(KEEP_IDLE, pool_size - 2))


class KeptConnections:
    """The idle kept connections of one engine (thread-safe: a deque's ends are atomic)."""

    def __init__(
        self,
        engine: Engine,
        *,
        keep: int = KEEP_IDLE,
        still_open: Check | None = None,
        outside_transaction: Check | None = None,
    ) -> None:
        self._engine = engine
        self._keep = keep
        self._still_open = still_open
        self._outside_transaction = outside_transaction
        self._idle: deque[Connection] = deque()

    def take(self) -> Connection:
        """An idle kept connection that is still usable, or a new one from the pool; no
        transaction is open on it."""
        while True:
            try:
                connection = self._idle.pop()
            except IndexError:
                return self._engine.connect()
            if self._still_open is None or self._still_open(connection):
                return connection
            connection.invalidate()  # the pool connects anew at its next checkout
            connection.close()

    def give_back(self, connection: Connection) -> None:
        """End the connection's transaction and keep it for the next unit of work, or close it."""
        if connection.invalidated or connection.closed:
            connection.close()
            return
        try:
            connection.rollback()
        except BaseException:
            connection.close()
            raise
        settled = self._outside_transaction is None or self._outside_transaction(connection)
        if len(self._idle) >= self._keep or not settled:
            connection.close()  # the pool's checkin resets whatever it still holds
        else:
            self._idle.append(connection)

    @property
    def idle(self) -> int:
        return len(self._idle)

    def close_all(self) -> None:
        """Return every idle connection to the pool (before the pool is disposed)."""
        while True:
            try:
                connection = self._idle.pop()
            except IndexError:
                return
            connection.close()
