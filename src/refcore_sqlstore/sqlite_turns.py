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

from sqlalchemy import Connection, NestedTransaction

from refcore.errors import InternalError
from refcore_sqlstore.engine import READ_ONLY_BEGIN
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.group_commit import GroupCommit, _Group, group_commit
from refcore_sqlstore.unit_of_work import SqlUnitOfWork


class ReadOnlyUnitOfWork(SqlUnitOfWork):
    def __enter__(self) -> Self:
        token = READ_ONLY_BEGIN.set(True)
        try:
            return super().__enter__()
        finally:
            READ_ONLY_BEGIN.reset(token)


class GroupCommitUnitOfWork(SqlUnitOfWork):
    """A writer's unit of work as one member of a group commit (see
    :mod:`refcore_sqlstore.group_commit`): its own savepoint on the group's shared transaction.

    :meth:`commit` returns once the group is committed, so the port's promise holds: the writes
    are durable and visible to every connection when it returns. Writes after a commit wait for
    a new turn and join a new group, as they would begin a new transaction elsewhere."""

    _group: _Group | None = None
    _savepoint: NestedTransaction | None = None
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
        turns = self._turns()
        turns.take_turn()
        try:
            group = turns.open_group()
            with database_errors():
                savepoint = group.connection.begin_nested()
        except BaseException:
            turns.finish_without_joining()
            raise
        self._group, self._savepoint, self._connection = group, savepoint, group.connection

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
        if self._group is None:
            return
        try:
            self._end_savepoint(commit=False)  # rolls back whatever was not committed
        except InternalError:
            if exc is None:
                raise
        finally:
            self._leave(joined=False)

    def commit(self) -> None:
        """Make every write durable and visible at once: keep them in the group, then wait for
        the group's ``COMMIT`` (``ConcurrentWrite`` if it failed: run the work again)."""
        if self._group is None:
            return  # nothing written since the last commit
        try:
            self._end_savepoint(commit=True)
        except BaseException:
            self._leave(joined=False)
            raise
        self._leave(joined=True)

    def rollback(self) -> None:
        if self._group is None:
            return
        try:
            self._end_savepoint(commit=False)
        finally:
            self._leave(joined=False)

    def _end_savepoint(self, *, commit: bool) -> None:
        savepoint, self._savepoint = self._savepoint, None
        if savepoint is None or not savepoint.is_active:
            return
        with database_errors():
            if commit:
                savepoint.commit()
            else:
                savepoint.rollback()

    def _leave(self, *, joined: bool) -> None:
        group, self._group = self._group, None
        self._connection = None
        self._savepoint = None
        self._forget_repositories()
        if group is not None:
            self._turns().finish(group, joined=joined)
