"""SQLite connections kept checked out between read units of work.

Every request with a key authenticates in a read unit of work, and reads run in one too. Taking
a connection from SQLAlchemy's pool and giving it back (its checkout and checkin events, its
reset) cost 112 K instructions, and beginning the transaction through a new ``Connection``
75 K more: a read unit of work cost 234 K before its first statement, about as much as a
payment's six ``SELECT``s together (callgrind, ``bench/history.md``). A kept connection only
begins and rolls back (58 K).

So the store keeps up to ``keep`` idle connections for its readers, each still checked out of
the pool: a read takes one (or a new one from the pool when none is idle), and gives it back
with its transaction rolled back. A connection that was invalidated, or whose rollback failed,
is closed instead, and the pool replaces it as usual. Only SQLite's reads do this: a kept
PostgreSQL connection would skip the pool's liveness check (``pool_pre_ping``) that lets a
server restart go unnoticed by the requests.
"""

from __future__ import annotations

from collections import deque

from sqlalchemy import Connection, Engine

#: Idle read connections kept at most: one per worker thread of the server by default.
KEEP_IDLE = 8


def idle_readers_for(pool_size: int) -> int:
    """How many idle read connections a pool of ``pool_size`` can spare: they stay checked out,
    so they must leave the group commit's writer connection and one more free, or a small pool
    (``REFCORE_DB_POOL_SIZE=3`` with no overflow) would keep every connection idle for reads
    while a write waited for one."""
    return max(0, min(KEEP_IDLE, pool_size - 2))


class ReadConnections:
    """The idle read connections of one engine (thread-safe: a deque's ends are atomic)."""

    def __init__(self, engine: Engine, *, keep: int = KEEP_IDLE) -> None:
        self._engine = engine
        self._keep = keep
        self._idle: deque[Connection] = deque()

    def take(self) -> Connection:
        """An idle kept connection, or a new one from the pool; no transaction is open on it."""
        try:
            return self._idle.pop()
        except IndexError:
            return self._engine.connect()

    def give_back(self, connection: Connection) -> None:
        """End the connection's transaction and keep it for the next read, or close it."""
        if connection.invalidated or connection.closed:
            connection.close()
            return
        try:
            connection.rollback()
        except BaseException:
            connection.close()
            raise
        if len(self._idle) >= self._keep:
            connection.close()
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
