"""SQLite units of work that queue for the write lock in-process, and reads that take none.

Two refinements of :class:`~refcore_sqlstore.unit_of_work.SqlUnitOfWork` for SQLite, chosen by
:class:`~refcore_sqlstore.store.SqlStore` (PostgreSQL keeps the plain unit of work):

- :class:`GroupCommitUnitOfWork` waits for this process's writer turn and runs as one member
  of a group commit (:mod:`refcore_sqlstore.group_commit`): concurrent requests of one server
  queue on a lock instead of sleeping in SQLite's busy handler, and share one ``COMMIT``;
- :class:`ReadOnlyUnitOfWork` (what :meth:`Runtime.read` uses) begins a *deferred* transaction:
  in WAL mode a reader sees one consistent snapshot and never blocks or waits for the writer,
  so authenticating a request or reading a list no longer takes the database's write lock.
  Nothing a read does is committed, as before.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from sqlalchemy import Connection

from refcore.errors import InternalError
from refcore_sqlstore.group_commit import GroupCommit, Savepoint, _Group, group_commit
from refcore_sqlstore.unit_of_work import SqlUnitOfWork


class ReadOnlyUnitOfWork(SqlUnitOfWork):
    """A deferred read, on a connection the store keeps between reads
    (:mod:`refcore_sqlstore.kept_connections`)."""

    begins_read_only = True


class GroupCommitUnitOfWork(SqlUnitOfWork):
    """A writer's unit of work as one member of a group commit (see
    :mod:`refcore_sqlstore.group_commit`): its own savepoint on the group's shared transaction.

    :meth:`commit` returns once the group is committed, so the port's promise holds: the writes
    are durable and visible to every connection when it returns. Writes after a commit wait for
    a new turn and join a new group, as they would begin a new transaction elsewhere."""

    _membership: tuple[_Group, Savepoint] | None = None
    _inside = False

    def __enter__(self) -> Self:
        self._forget_repositories()
        self._start()
        self._inside = True
        return self

    def _turns(self) -> GroupCommit:
        turns = group_commit(self._engine)
        assert turns is not None, "group commit is for SQLite engines"
        return turns

    def _start(self) -> None:
        self._membership = self._turns().join()
        self._connection = self._membership[0].connection

    def _require_connection(self) -> Connection:
        if self._connection is None and self._inside:
            self._start()  # the first write after a commit or a rollback
        return super()._require_connection()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._inside = False
        try:
            self._leave(keep=False)  # rolls back whatever was not committed
        except InternalError:
            if exc is None:
                raise

    def commit(self) -> None:
        """Make every write durable and visible at once: keep them in the group, then wait for
        the group's ``COMMIT`` (``ConcurrentWrite`` if it failed: run the work again)."""
        self._leave(keep=True)

    def rollback(self) -> None:
        self._leave(keep=False)

    def _leave(self, *, keep: bool) -> None:
        membership, self._membership = self._membership, None
        self._connection = None
        self._forget_repositories()
        if membership is not None:
            self._turns().leave(*membership, keep=keep)
