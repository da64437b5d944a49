"""SQLite writers of one process take turns on one shared transaction and share its COMMIT.

SQLite has one write lock per database, so a process's writers run one after another whatever
we do. What costs is what each of them did around its few statements: check a connection out,
``BEGIN IMMEDIATE``, ``COMMIT`` (an ``fsync`` of the write-ahead log with ``synchronous=FULL``)
and hand the lock to the next thread. Group commit keeps the order and the guarantee (no
answer before its writes are durable) and pays those once per group:

- A writer waits for its **turn** on a lock (fair: waiters queue on a condition rather than
  sleeping in SQLite's busy handler). The first writer of a group opens the shared transaction
  with ``BEGIN IMMEDIATE``; each writer runs inside its own ``SAVEPOINT`` on it, so a writer
  that fails rolls back only its own statements.
- When it is done, a writer that has other writers queued behind it passes the turn on and
  waits for the group's outcome. The writer that finds nobody queued (or the group full)
  commits the group and wakes every member. A member's unit of work ends only then, so its
  answer still comes after its writes are durable.
- If that ``COMMIT`` fails, nothing of the group was written. Its members get
  :class:`~refcore.errors.ConcurrentWrite`, which makes ``Runtime.transaction`` run their work
  again, alone this time (committed by itself), so one bad unit of work cannot fail its
  neighbours twice: a deferred foreign key that one member broke fails only that member in the
  end.

Members of a group see each other's writes before they are committed (one connection); they
are committed together or not at all, so no answer can rest on a write that is later lost.
The outbox's claims and closes join groups the same way (:func:`write_transaction`). Other
processes writing the same file still meet ``busy_timeout``, as before; PostgreSQL needs none
of this (row locks, one commit per request).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast
from weakref import WeakKeyDictionary

from sqlalchemy import Connection, Engine

from refcore.errors import ConcurrentWrite, InternalError
from refcore_sqlstore.engine import SQLITE_BUSY_TIMEOUT_SECONDS
from refcore_sqlstore.errors import database_errors

#: A group is committed once it has this many members, even with writers still queued, so a
#: steady stream of writers cannot postpone durability (and the answers) indefinitely.
MAX_GROUP = 64

_SOLO = threading.local()
#: ``group``: the group of the :meth:`GroupCommit.batch` this thread is running, if any.
_BATCH = threading.local()


def _held_batch() -> _Group | None:
    held: _Group | None = getattr(_BATCH, "group", None)
    return held


class Savepoint:
    """One member's ``SAVEPOINT`` on its group's connection, sent straight to the driver.

    SQLAlchemy's ``Connection.begin_nested()`` does the same, but compiles its ``SAVEPOINT``,
    ``RELEASE`` and ``ROLLBACK TO`` statements anew on every call (they are never cached): under
    callgrind that was 16 % of the instructions of a public capture's service call, in-process.
    The group commit already owns the transaction around it, so the savepoint is three fixed
    statements and one flag; and since they have no parameters and no result, the driver runs
    them without SQLAlchemy's execution path, which cost four times the statements themselves.
    Their errors are the driver's (see :func:`refcore_sqlstore.errors.database_errors`)."""

    def __init__(self, driver: sqlite3.Connection, name: str) -> None:
        self._driver = driver
        self._name = name
        self._driver.execute(f"SAVEPOINT {name}")
        #: Neither released nor rolled back yet.
        self.is_active = True

    def commit(self) -> None:
        """Release the savepoint: its writes become part of the group's transaction."""
        self._driver.execute(f"RELEASE SAVEPOINT {self._name}")
        self.is_active = False

    def rollback(self) -> None:
        """Undo the savepoint's writes and end it (SQLite keeps a rolled-back savepoint open
        until it is released)."""
        self._driver.execute(f"ROLLBACK TO SAVEPOINT {self._name}")
        self._driver.execute(f"RELEASE SAVEPOINT {self._name}")
        self.is_active = False


class _Group:
    """One shared transaction and the writers that joined it."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        #: The driver's connection under it, which the members' savepoints are sent to (the group
        #: commit runs on SQLite only: pysqlite's connection).
        self.driver = cast(sqlite3.Connection, connection.connection.dbapi_connection)
        self.members = 0
        #: Savepoints opened on it so far, which also names the next one.
        self.savepoints = 0
        self.done = threading.Event()
        self.failure: BaseException | None = None
        #: A member's savepoint could not be ended cleanly: the group must not be committed.
        self.broken = False

    def open_savepoint(self) -> Savepoint:
        """A new member's savepoint on the group's connection, named by its number.

        ``ConcurrentWrite`` (run it again alone, after the group) once the group is broken or
        its transaction is gone: a full disk or an I/O error mid-statement makes SQLite roll
        back the whole transaction, and a ``SAVEPOINT`` outside one begins a transaction of its
        own, which its ``RELEASE`` commits at once. A batch's writes after such a failure had
        each been committed alone, before the batch failed and ran them again (probe Z)."""
        if self.broken or not self.driver.in_transaction:
            self.broken = True
            raise ConcurrentWrite("this write's group ended under it; run it again alone")
        self.savepoints += 1
        with database_errors():
            return Savepoint(self.driver, f"member_{self.savepoints}")


class GroupCommit:
    """The writer turns and the open group of one SQLite engine, shared by the process."""

    def __init__(self, engine: Engine, *, max_group: int = MAX_GROUP) -> None:
        self._engine = engine
        self._max_group = max_group
        self._turns = threading.Condition()
        self._holder: int | None = None
        self._queued = 0
        self._group: _Group | None = None
        #: Kept checked out between groups (see :meth:`_writer_connection`).
        self._writer: Connection | None = None

    # -- turns -----------------------------------------------------------------------------

    def take_turn(self) -> None:
        """Wait for this thread's turn (``ConcurrentWrite`` after the busy timeout)."""
        me = threading.get_ident()
        with self._turns:
            if self._holder == me:
                raise InternalError("A write unit of work is already open in this thread")
            self._queued += 1
            try:
                if not self._turns.wait_for(lambda: self._holder is None, SQLITE_BUSY_TIMEOUT_SECONDS):
                    raise ConcurrentWrite("the SQLite writer turn was not free within the busy timeout")
            finally:
                self._queued -= 1
            self._holder = me

    def _pass_turn(self) -> None:
        with self._turns:
            self._holder = None
            self._turns.notify()

    @property
    def queued_writers(self) -> int:
        """Threads waiting for the turn now."""
        with self._turns:
            return self._queued

    # -- members ---------------------------------------------------------------------------

    @staticmethod
    def solo() -> bool:
        """Whether this thread's next unit of work must commit by itself (its group failed)."""
        return bool(getattr(_SOLO, "next", False))

    def open_group(self) -> _Group:
        """The open group, begun if there is none. The caller holds the turn."""
        if self._group is not None and self.solo():
            self._commit_group()  # its members' fate must not depend on this retried work
        if self._group is None:
            with database_errors():
                connection = self._writer_connection()
                try:
                    connection.begin()  # BEGIN IMMEDIATE (engine event)
                except BaseException:
                    self._forget_writer(invalidate=True)
                    raise
            self._group = _Group(connection)
        return self._group

    def _writer_connection(self) -> Connection:
        """The connection every group of this process writes on, one group after another.

        It stays checked out between groups instead of going back to the pool after each
        ``COMMIT``: checking a connection out and in (the pool's reset, its queue and events) was
        a seventh of the server's interpreter time on public captures (py-spy). Between groups
        it holds no transaction and no lock. It is dropped after any failure, and by
        :meth:`release_writer`."""
        if self._writer is None or self._writer.invalidated or self._writer.closed:
            self._writer = self._engine.connect()
        return self._writer

    def _forget_writer(self, *, invalidate: bool) -> None:
        """Let the writer connection go: back to the pool, or discarded (``invalidate``) when its
        state after a failure is unknown."""
        writer, self._writer = self._writer, None
        if writer is not None:
            if invalidate:
                writer.invalidate()
            writer.close()

    def release_writer(self) -> None:
        """Give the writer connection back to the pool, once no group is open (the turn is
        taken for it): for :meth:`SqlStore.dispose <refcore_sqlstore.store.SqlStore.dispose>`."""
        self.take_turn()
        try:
            self._commit_group()
            self._forget_writer(invalidate=False)
        finally:
            self._pass_turn()

    def finish_without_joining(self) -> None:
        """End the turn of a writer that could not start (the group, if any, stays open)."""
        self._end_turn(may_pass=True)

    def _end_turn(self, *, may_pass: bool) -> None:
        """Pass the turn on with the group open to a queued writer (``may_pass``), or commit the
        group and free the turn. Deciding and passing happen under one lock: a waiter that gives
        up meanwhile is either still counted (and takes the turn) or not (and the group is
        committed here), so an open group is never left without a writer to commit it."""
        with self._turns:
            group = self._group
            if may_pass and group is not None and not group.broken and self._queued > 0:
                self._holder = None
                self._turns.notify()
                return
        try:
            self._commit_group()
        finally:
            self._pass_turn()

    def finish(self, group: _Group, *, joined: bool) -> None:
        """End this thread's turn; once the group it ``joined`` is committed, return (or raise).

        The caller holds the turn. It commits the group itself unless other writers are queued
        (and the group has room, and this is not a solo retry): then it passes the turn on."""
        solo = self.solo()
        _SOLO.next = False
        if joined:
            group.members += 1
        self._end_turn(may_pass=not solo and group.members < self._max_group)
        if not joined:
            return
        group.done.wait()
        if group.failure is not None:
            if solo or group.members == 1:
                raise group.failure  # its own failure: running it again would fail the same way
            _SOLO.next = True
            raise ConcurrentWrite("the group this write was committed with failed; run it again alone")

    def _commit_group(self) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        try:
            with database_errors():
                try:
                    if group.broken:
                        group.connection.rollback()
                        if group.members:
                            raise ConcurrentWrite("a member of this group could not end its savepoint")
                    elif group.members:
                        group.connection.commit()
                    else:
                        group.connection.rollback()
                except BaseException:
                    # A refused COMMIT can leave SQLite's transaction open: never reuse it.
                    self._forget_writer(invalidate=True)
                    raise
        except BaseException as exc:
            group.failure = exc
        finally:
            group.done.set()

    def join(self) -> tuple[_Group, Savepoint]:
        """Take the turn and open this writer's savepoint on the open group's connection; in a
        :meth:`batch`, open it on the batch's group, whose turn this thread holds already."""
        held = _held_batch()
        if held is not None:
            return held, held.open_savepoint()
        self.take_turn()
        try:
            group = self.open_group()
            return group, group.open_savepoint()
        except BaseException:
            self.finish_without_joining()
            raise

    def leave(self, group: _Group, savepoint: Savepoint, *, keep: bool) -> None:
        """End this writer's savepoint, kept (released into the group) or rolled back, and its
        turn; when kept, return once the group is committed (see :meth:`finish`), or at once in
        a :meth:`batch`, which commits it. A savepoint that cannot be ended cleanly breaks the
        group: nothing of it is committed, and its members run again."""
        joined = False
        try:
            if keep and not savepoint.is_active:
                # Never report as kept what may already have been rolled back.
                raise InternalError("The write ended before it could be committed")
            if savepoint.is_active:
                with database_errors():
                    if keep:
                        savepoint.commit()
                        joined = True
                    else:
                        savepoint.rollback()
        except BaseException:
            group.broken = True
            raise
        finally:
            if group is not _held_batch():
                self.finish(group, joined=joined)
            elif joined:
                group.members += 1  # committed, or not, when its batch ends

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the turn and one group while this thread runs several writes, and commit the
        group when the block ends; raise if that failed (nothing of the batch is then written).

        Inside the block each write is a member as usual, with a savepoint of its own, so one
        that fails rolls back only its own statements; but its commit returns as soon as its
        savepoint is released. Writes from many threads pay for taking turns: on one CPU, eight
        threads writing payments used 0.60 ms of CPU a payment where one thread running them in
        batches of 32 used 0.44 (``bench/history.md``, twenty-sixth session). Whoever runs
        writes in a batch must answer for none of them before the block has ended normally."""
        if _held_batch() is not None:
            raise InternalError("A write batch is already open in this thread")
        self.take_turn()
        try:
            group = self.open_group()
        except BaseException:
            self.finish_without_joining()
            raise
        _BATCH.group = group
        try:
            yield
        except BaseException:
            group.broken = True  # a batch that failed as a whole commits nothing
            raise
        finally:
            _BATCH.group = None
            self._end_turn(may_pass=False)
        if group.failure is not None:
            if group.members == 1:
                raise group.failure
            raise ConcurrentWrite("the batch's commit failed; run its writes again, each alone")

    @contextmanager
    def member(self) -> Iterator[Connection]:
        """A block of writes as one member: kept if the block ends normally, and durable (or
        ``ConcurrentWrite``) when the block is left."""
        group, savepoint = self.join()
        try:
            yield group.connection
        except BaseException:
            self.leave(group, savepoint, keep=False)
            raise
        self.leave(group, savepoint, keep=True)


_GROUPS: WeakKeyDictionary[Engine, GroupCommit] = WeakKeyDictionary()
_GUARD = threading.Lock()


def group_commit(engine: Engine) -> GroupCommit | None:
    """This process's :class:`GroupCommit` for an SQLite engine; ``None`` for other databases."""
    if engine.dialect.name != "sqlite":
        return None
    with _GUARD:
        found = _GROUPS.get(engine)
        if found is None:
            found = _GROUPS[engine] = GroupCommit(engine)
        return found


def existing_group_commit(engine: Engine) -> GroupCommit | None:
    """The engine's :class:`GroupCommit` if this process has made one (none is made here)."""
    with _GUARD:
        return _GROUPS.get(engine)


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection in a write transaction that is committed when the block ends normally: a
    member of the group commit on SQLite, an ordinary transaction elsewhere."""
    group = group_commit(engine)
    if group is None:
        with engine.begin() as connection:
            yield connection
        return
    with group.member() as connection:
        yield connection
