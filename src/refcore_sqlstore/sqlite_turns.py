"""SQLite units of work that queue for the write lock in-process, and reads that take none.

Two refinements of :class:`~refcore_sqlstore.unit_of_work.SqlUnitOfWork` for SQLite, chosen by
:class:`~refcore_sqlstore.store.SqlStore` (PostgreSQL keeps the plain unit of work):

- :class:`WriterTurnUnitOfWork` waits for this process's writer turn
  (:mod:`refcore_sqlstore.writer_lock`) before ``BEGIN IMMEDIATE``, so concurrent requests of
  one server queue on a lock instead of sleeping in SQLite's busy handler;
- :class:`ReadOnlyUnitOfWork` (what :meth:`Runtime.read` uses) begins a *deferred* transaction:
  in WAL mode a reader sees one consistent snapshot and never blocks or waits for the writer,
  so authenticating a request or reading a list no longer takes the database's write lock.
  Nothing a read does is committed, as before.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Self

from refcore_sqlstore.engine import READ_ONLY_BEGIN, SQLITE_BUSY_TIMEOUT_SECONDS
from refcore_sqlstore.unit_of_work import SqlUnitOfWork
from refcore_sqlstore.writer_lock import writer_lock


class ReadOnlyUnitOfWork(SqlUnitOfWork):
    def __enter__(self) -> Self:
        token = READ_ONLY_BEGIN.set(True)
        try:
            return super().__enter__()
        finally:
            READ_ONLY_BEGIN.reset(token)


class WriterTurnUnitOfWork(SqlUnitOfWork):
    _turn: threading.RLock | None = None

    def __enter__(self) -> Self:
        lock = writer_lock(self._engine)
        # After the busy timeout go ahead anyway: SQLite's own busy handling decides, as before.
        if lock is not None and lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_SECONDS):
            self._turn = lock
        try:
            return super().__enter__()
        except BaseException:
            self._release()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            super().__exit__(exc_type, exc, tb)
        finally:
            self._release()

    def _release(self) -> None:
        turn, self._turn = self._turn, None
        if turn is not None:
            turn.release()
