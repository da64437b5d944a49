"""PostgreSQL write batches: one connection, one transaction, a savepoint a write, one ``COMMIT``.

Each keyed write on PostgreSQL had a unit of work of its own: a worker thread, a pooled
connection's checkout and return, three round trips (the key's lookup, the reads that carry the
``BEGIN``, the inserts with the ``COMMIT``) and a commit that waits for the log's flush. On this
machine refcore's process spent 1.18 ms of CPU a payment so, against 0.54 for SQLite's write
batches (``bench/history.md``, twenty-sixth session). A batch (:func:`write_batch`, which
``Runtime.batch`` runs) lets one thread run several writes in one transaction:

- **Each write is a member with its own savepoint** (:class:`BatchMemberUnitOfWork`): one that
  fails rolls back to it and undoes only its own statements. The ``SAVEPOINT`` leaves with the
  member's first statement, as ``BEGIN`` does (:mod:`refcore_sqlstore.postgres_round_trips`),
  so it costs no round trip of its own.
- **A member's commit sends its deferred inserts and its ``RELEASE SAVEPOINT`` in one round
  trip**, then returns: a duplicate key or any refused insert is raised by that member's
  commit, never by the next member's statements or by the batch's ``COMMIT``.
- **The batch commits once, when the block ends**; the block raises if it could not (a
  deferred foreign key broken by one member, a lost connection), and then nothing of it was
  written. ``Runtime.batch`` says what its caller does then, and with a member's lost race.
- **Row locks are held until that ``COMMIT``**, so a batch can wait for another process's batch,
  or deadlock with it. Each batch's transaction sets ``lock_timeout`` to
  :data:`LOCK_TIMEOUT_MS`: a member that waits longer fails with a lost race (it is run again
  alone, after the batch) instead of holding the batch, and a deadlock between two batches is
  broken that soon rather than after the server's ``deadlock_timeout``.

A batch's released savepoints stay subtransactions of its transaction: up to 64 of them fit
the cache PostgreSQL keeps per backend, so batches hold at most 32 writes
(``refcore_http.write_batches.MAX_BATCH``) and a retried member adds at most one more.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Self

from sqlalchemy import Connection, Engine

from refcore.errors import ConcurrentWrite, InternalError
from refcore_sqlstore import postgres_round_trips
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.unit_of_work import SqlUnitOfWork

#: How long a batch's statement waits for a row lock before it gives up (a lost race).
LOCK_TIMEOUT_MS = 100

_SET_LOCK_TIMEOUT = f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}"

_HELD = threading.local()


class PostgresBatch:
    """The transaction of one :func:`write_batch` and the members it kept so far."""

    def __init__(self, engine: Engine, connection: Connection) -> None:
        self.engine = engine
        self.connection = connection
        #: Members whose writes were released into the transaction.
        self.kept = 0
        #: Savepoints opened so far, which also names the next one.
        self.savepoints = 0
        #: A member's savepoint could not be ended cleanly: the batch must not be committed.
        self.broken = False


def held_batch(engine: Engine) -> PostgresBatch | None:
    """The batch this thread is running on ``engine``, if any."""
    batch: PostgresBatch | None = getattr(_HELD, "batch", None)
    return batch if batch is not None and batch.engine is engine else None


@contextmanager
def write_batch(engine: Engine) -> Iterator[None]:
    """Run this thread's write units of work on ``engine`` inside the block as members of one
    transaction, committed when the block ends (see the module docstring)."""
    if getattr(_HELD, "batch", None) is not None:
        raise InternalError("A write batch is already open in this thread")
    with database_errors():
        connection = engine.connect()
    try:
        with database_errors():
            connection.begin()  # its BEGIN leaves with the first member's first statement
        postgres_round_trips.defer(connection, _SET_LOCK_TIMEOUT, None, many=False)
        batch = _HELD.batch = PostgresBatch(engine, connection)
        try:
            yield
        finally:
            _HELD.batch = None
        _commit(batch)
    finally:
        connection.close()  # rolls back whatever was not committed


def _commit(batch: PostgresBatch) -> None:
    """Commit the batch's transaction, if it kept a member. If a member broke it, or the
    ``COMMIT`` failed, nothing of it is written: raise the one member's own error, or
    ``ConcurrentWrite`` (run the writes again, each alone), as SQLite's batches do."""
    if batch.broken:
        raise ConcurrentWrite("a member of this write batch could not be undone; nothing was written")
    if not batch.kept:
        return
    try:
        with database_errors():
            try:
                batch.connection.commit()
            except BaseException:
                batch.connection.invalidate()  # its state after a refused COMMIT is unknown
                raise
    except Exception as failure:
        if batch.kept == 1:
            raise
        raise ConcurrentWrite("the batch's commit failed; run its writes again, each alone") from failure


class BatchMemberUnitOfWork(SqlUnitOfWork):
    """A write unit of work run as one member of this thread's :func:`write_batch`: a savepoint
    on the batch's transaction. Its :meth:`commit` returns once its writes are in the batch
    (durable when the batch commits); writes after it open a new savepoint."""

    def __init__(self, engine: Engine, batch: PostgresBatch) -> None:
        super().__init__(engine)
        self._batch = batch
        self._savepoint: str | None = None
        self._inside = False

    def __enter__(self) -> Self:
        self._forget_repositories()
        self._inside = True
        self._open_savepoint()
        return self

    def _open_savepoint(self) -> None:
        batch = self._batch
        batch.savepoints += 1
        self._savepoint = f"member_{batch.savepoints}"
        postgres_round_trips.defer(batch.connection, *_savepoint_statement(self._savepoint)[:2], many=False)
        self._connection = batch.connection

    def _require_connection(self) -> Connection:
        if self._connection is None and self._inside:
            self._open_savepoint()  # the first write after a commit or a rollback
        return super()._require_connection()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._inside = False
        try:
            self.rollback()  # undoes whatever was not committed
        except InternalError:
            if exc is None:
                raise

    def commit(self) -> None:
        """Send the member's deferred writes and release its savepoint, in one round trip."""
        name, self._savepoint = self._savepoint, None
        self._leave()
        if name is None:
            return
        connection = self._batch.connection
        try:
            with database_errors():
                if postgres_round_trips.discard_last(connection, _savepoint_statement(name)):
                    return  # it wrote nothing, and read nothing: there is nothing to keep
                postgres_round_trips.defer(connection, f"RELEASE SAVEPOINT {name}", None, many=False)
                postgres_round_trips.flush(connection)
        except BaseException:
            self._roll_back_to(name)
            raise
        self._batch.kept += 1

    def rollback(self) -> None:
        name, self._savepoint = self._savepoint, None
        self._leave()
        if name is not None:
            self._roll_back_to(name)

    def _leave(self) -> None:
        self._connection = None
        self._forget_repositories()

    def _roll_back_to(self, name: str) -> None:
        """Undo the member's writes: drop those never sent, and if its savepoint reached the
        server, roll back to it there. A batch whose member cannot be undone is broken."""
        connection = self._batch.connection
        try:
            with database_errors():
                if postgres_round_trips.discard_since(connection, _savepoint_statement(name)):
                    return  # nothing of the member reached the server
                postgres_round_trips.discard_since(connection, None)
                postgres_round_trips.defer(connection, f"ROLLBACK TO SAVEPOINT {name}", None, many=False)
                postgres_round_trips.flush(connection)
        except BaseException:
            self._batch.broken = True
            raise


def _savepoint_statement(name: str) -> postgres_round_trips.Deferred:
    return (f"SAVEPOINT {name}", None, False)
