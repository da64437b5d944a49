"""The runtime: the ports a service needs, and the transaction runner that every service uses.

:meth:`Runtime.transaction` opens a unit of work, runs the work, commits, and only then tells
the notifier about the events the work emitted. When a store reports a lost race
(:class:`~refcore.errors.ConcurrentWrite`, e.g. two servers inserting the same payment ID), the
work runs again from scratch and sees the winner's row, which turns a duplicate into a replay.
Between attempts it pauses a random moment that doubles with each attempt: transactions that
deadlocked or collided retried at once tend to meet again (four PostgreSQL servers racing
refunds and disputes on six payments saw a request lose five immediate attempts in a row).

Inside a :meth:`Runtime.batch` block a transaction runs once, without the retries: it holds
the batch's locks and turn while it would wait, so a lost race is left to the batch's caller,
which runs that work again alone once the batch has ended.

:meth:`Runtime.read` runs its work in a read-only unit of work; inside a
:meth:`Runtime.shared_read` block every read shares one (see there). Inside a
:meth:`Runtime.read_then_write` block, on a store whose reads may join its writes, the reads
and the first transaction after them share one unit of work, which the transaction commits;
a lookup the block must find (:meth:`Runtime.check_with_first_read`) rides with the first
``look_up`` of its work (:mod:`refcore.services.first_read_checks`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, TypeVar

from attrs import define, field

from refcore.errors import ConcurrentWrite, Conflict, InternalError, RefcoreError
from refcore.models import Event, EventType, WebhookEndpoint
from refcore.models.tenancy import DEFAULT_SESSION_LIFETIME
from refcore.ports import Clock, EventNotifier, IdGenerator, UnitOfWork, UnitOfWorkFactory
from refcore.ports.lookups import Found, Lookup
from refcore.rules.webhook_subscription import takes
from refcore.services.first_read_checks import FirstReadCheck, checking

T = TypeVar("T")

_ATTEMPTS = 8
#: The longest pause before the first retry, in seconds; it doubles for each later one (so at
#: most 0.127 s in all before the request is refused).
_FIRST_PAUSE_SECONDS = 0.001


def pause_before_retry(retry: int) -> None:
    """Sleep up to ``_FIRST_PAUSE_SECONDS * 2**retry`` (``retry`` counts from 0), at random."""
    time.sleep(random.uniform(0, _FIRST_PAUSE_SECONDS * 2**retry))


class _SharedRead:
    """The unit of work that the reads of one :meth:`Runtime.shared_read` block share, opened
    by the first of them."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._stack = ExitStack()
        self._uow: UnitOfWork | None = None
        #: Reads of the block running now: a read's work may itself read.
        self._running = 0
        #: End the unit of work as soon as no read is running.
        self._ending = False

    @contextmanager
    def reading(self, factory: UnitOfWorkFactory) -> Iterator[UnitOfWork]:
        if self._uow is None:
            self._uow = self._stack.enter_context(factory())
        self._running += 1
        failure: BaseException | None = None
        try:
            yield self._uow
        except BaseException as error:
            # As a read of its own would: whatever failed ends with its unit of work (a failed
            # statement leaves a PostgreSQL transaction unusable), which hears what failed, and
            # a later read starts afresh.
            self._ending = True
            failure = error
            raise
        finally:
            self._running -= 1
            if self._ending and not self._running:
                self._end(failure)

    @property
    def holds_unit_of_work(self) -> bool:
        """Whether the block's unit of work is open (a read of it is still running)."""
        return self._uow is not None

    @property
    def reading_now(self) -> bool:
        """Whether a read of the block is running: a transaction started inside a read's work
        must not commit and end the unit of work that read is still using."""
        return self._running > 0

    def end(self) -> None:
        """End the unit of work once no read uses it (a write committed: later reads must see it)."""
        self._ending = True
        if not self._running:
            self.close()

    def close(self) -> None:
        """End the shared unit of work (nothing was committed); the next read opens another."""
        self._end(None)

    def _end(self, error: BaseException | None) -> None:
        """End the shared unit of work, telling it what failed in it, if anything: the SQL store
        then lets that failure through rather than an error of the connection's release."""
        self._uow = None
        self._ending = False
        if error is None:
            self._stack.close()
        else:
            self._stack.__exit__(type(error), error, error.__traceback__)


_SHARED_READ: ContextVar[_SharedRead | None] = ContextVar("refcore_shared_read", default=None)


class _SharedWrite(_SharedRead):
    """The unit of work of one :meth:`Runtime.read_then_write` block: opened by its first read
    (a write unit of work), then handed to its first transaction, which commits it. Once that
    transaction ran, or a read failed, the block shares nothing more."""

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        #: Whether reads and a transaction may still join the unit of work.
        self.open = True
        #: What the block's units of work must answer (:meth:`Runtime.check_with_first_read`).
        self.check: FirstReadCheck | None = None

    @contextmanager
    def writing(self) -> Iterator[UnitOfWork | None]:
        """The unit of work the block's reads opened, for the transaction to run its work in and
        commit (``None`` when no read opened one); it ends with the transaction, committed or not."""
        self.open = False
        try:
            yield self._uow
        except BaseException as error:
            self._end(error)
            raise
        else:
            self.close()

    def _end(self, error: BaseException | None) -> None:
        self.open = False
        super()._end(error)


_SHARED_WRITE: ContextVar[_SharedWrite | None] = ContextVar("refcore_shared_write", default=None)


class _Batch:
    """The :meth:`Runtime.batch` block running now: the events its transactions emitted, told
    to the notifier once the batch is committed."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.emitted: list[Event] = []


_BATCH: ContextVar[_Batch | None] = ContextVar("refcore_write_batch", default=None)

#: Whether a :meth:`Runtime.transaction`'s work is running here (this thread or task). A
#: transaction started inside another's work would commit on its own: kept on PostgreSQL and on
#: the memory store even when the outer one then failed, refused by SQLite (one writer a thread).
#: A service called from inside a library caller's own transaction had done exactly that.
_IN_TRANSACTION: ContextVar[bool] = ContextVar("refcore_in_transaction", default=False)

logger = logging.getLogger("refcore.runtime")

_Shared = TypeVar("_Shared", bound=_SharedRead)


@contextmanager
def _sharing(current: ContextVar[_Shared | None], shared: _Shared) -> Iterator[None]:
    """``shared`` for the block's reads (in this thread or task), ended with the block."""
    token = current.set(shared)
    try:
        yield
    finally:
        current.reset(token)
        shared.close()


def _check_of(runtime: Runtime) -> FirstReadCheck | None:
    """The check of the :meth:`Runtime.read_then_write` block of ``runtime`` running now, if any."""
    shared = _SHARED_WRITE.get()
    if shared is None or shared.runtime is not runtime:
        return None
    return shared.check


class NullNotifier:
    def events_committed(self, events: Sequence[Event]) -> None:
        return None


@define
class Tx:
    """One running unit of work, with one ``now`` for everything it writes."""

    uow: UnitOfWork
    now: datetime
    ids: IdGenerator
    #: The events this unit of work left waiting in the outbox, told to the notifier once it
    #: has committed (:meth:`_closed_at`: the others are written closed).
    emitted: list[Event] = field(factory=list)
    #: The runtime's :attr:`Runtime.session_lifetime`, here because a session is judged inside
    #: whatever unit of work authenticates it (a request's own, or a capture batch's:
    #: :func:`refcore.services.tenancy.principal_in`), which has no runtime to ask.
    session_lifetime: timedelta = DEFAULT_SESSION_LIFETIME
    #: The runtime's :attr:`Runtime.outbox_for_webhooks`.
    outbox_for_webhooks: bool = False
    #: Per App, its webhook endpoint as this unit of work read it (:meth:`_closed_at`).
    _endpoints: dict[str, WebhookEndpoint | None] = field(factory=dict, init=False, repr=False)

    def new_id(self, prefix: str) -> str:
        return self.ids.new(prefix)

    def new_ids(self, prefix: str, count: int) -> list[str]:
        return self.ids.new_many(prefix, count)

    def emit(self, type: EventType, *, app_id: str, livemode: bool, data: dict[str, Any]) -> Event:
        """Write an event to the outbox inside this unit of work (it commits with the change)."""
        event = Event(
            id=self.new_id("whev"),
            app_id=app_id,
            type=type,
            livemode=livemode,
            created_at=self.now,
            data=data,
            delivered_at=self._closed_at(app_id, type),
        )
        if event.delivered_at is None:
            self.emitted.append(event)
        self.uow.events.add(event)
        return event

    def emit_each(
        self, type: EventType, *, app_id: str, livemode: bool, data: Sequence[dict[str, Any]]
    ) -> list[Event]:
        """:meth:`emit` of one event for each snapshot in ``data``, in that order, written
        together: a thousand ``commission.paid`` events of one payout go to the outbox in one
        statement where the store can, instead of a thousand."""
        if not data:
            return []
        ids = self.new_ids("whev", len(data))
        closed_at = self._closed_at(app_id, type)
        events = [
            Event(
                id=id,
                app_id=app_id,
                type=type,
                livemode=livemode,
                created_at=self.now,
                data=snapshot,
                delivered_at=closed_at,
            )
            for id, snapshot in zip(ids, data, strict=True)
        ]
        if closed_at is None:
            self.emitted.extend(events)
        self.uow.events.add_all(events)
        return events

    def look_up_before_events(self, app_id: str, *lookups: Lookup[Any]) -> Found:
        """``uow.look_up(*lookups)`` of a write that may emit events of ``app_id``: where those
        events are judged against the App's webhook endpoint (:meth:`_closed_at`), the endpoint
        is read in the same statement, so the events need no read of their own (on PostgreSQL a
        round trip, on SQLite about 100 thousand instructions)."""
        if not self.outbox_for_webhooks or app_id in self._endpoints:
            return self.uow.look_up(*lookups)
        endpoint = Lookup("webhook_endpoints", WebhookEndpoint, {"app_id": app_id})
        found = self.uow.look_up(*lookups, endpoint)
        self._endpoints[app_id] = found[endpoint]
        return found

    def _closed_at(self, app_id: str, type: EventType) -> datetime | None:
        """When an event of ``app_id`` and ``type`` written now is closed: never (``None``, it
        waits in the outbox for its reader), unless that reader is the webhook dispatcher alone
        (:attr:`outbox_for_webhooks`) and the App's endpoint does not take it (:func:`takes`).
        Then it is closed as it is written, with no request ever (``docs/webhooks.md``, "Which
        events").

        The dispatcher would have found no request due and closed it anyway, but only after
        claiming it: two more writes of the event's row. For an App without an endpoint the
        dispatcher's work was 8 % of a payment's instructions on SQLite, and those writes a third
        of a payment's WAL on PostgreSQL (``bench/history.md``, forty-fifth session). An event
        that waits is judged again right before its request, against the endpoint as it is then."""
        if not self.outbox_for_webhooks:
            return None
        if app_id not in self._endpoints:
            self._endpoints[app_id] = self.uow.webhook_endpoints.find_one({"app_id": app_id})
        return None if takes(self._endpoints[app_id], type, self.now) else self.now


@define
class Runtime:
    unit_of_work: UnitOfWorkFactory
    clock: Clock
    ids: IdGenerator
    notifier: EventNotifier = field(factory=NullNotifier)
    #: Units of work for :meth:`read`, when the store has a cheaper read-only kind (SQLite
    #: begins them without taking the write lock); ``None`` uses ``unit_of_work``.
    read_unit_of_work: UnitOfWorkFactory | None = None
    #: Units of work for :meth:`read` with ``snapshot=True``, where the store's read units of work
    #: do not already see one moment (PostgreSQL's read each statement's own); ``None`` where they
    #: do (SQLite's, the memory store's), and ``snapshot`` then changes nothing.
    snapshot_unit_of_work: UnitOfWorkFactory | None = None
    #: Called with the retry's number (0 for the first) before running the work again.
    pause: Callable[[int], None] = pause_before_retry
    #: Whether a read may open the unit of work of the write that follows it
    #: (:meth:`read_then_write`): on PostgreSQL a transaction costs nothing until the first
    #: statement that needs it, which carries its ``BEGIN``; SQLite's writers take turns for
    #: one lock, so a read there must not take the turn before it knows there is a write to do.
    reads_join_writes: bool = False
    #: A block whose transactions, in the thread that runs it, are committed together when it
    #: ends, where the store can do that for less than committing each (SQLite's group commit:
    #: :meth:`GroupCommit.batch <refcore_sqlstore.group_commit.GroupCommit.batch>`); ``None``
    #: where it cannot. Services use it through :meth:`batch`.
    write_batch: Callable[[], AbstractContextManager[None]] | None = None
    #: How long after it was created a dashboard session still authenticates: the server sets
    #: it from ``REFCORE_SESSION_TTL_HOURS`` (:func:`refcore_http.app.create_app`). Applied to
    #: the stored ``created_at`` at ``clock.now()`` whenever a token is checked, so it needs no
    #: column, a test moves past it with its clock, and a shorter setting ends older sessions
    #: at the next restart.
    session_lifetime: timedelta = DEFAULT_SESSION_LIFETIME
    #: Whether the outbox's only reader is the webhook dispatcher, as in the server
    #: (:func:`refcore_http.store.open_store`): then an event no webhook request is due for when
    #: it is written is written closed (:meth:`Tx._closed_at`). A library caller that reads its
    #: events from the outbox keeps ``False``: every event waits there for it.
    outbox_for_webhooks: bool = False

    def transaction(self, work: Callable[[Tx], T]) -> T:
        """Run ``work`` in one unit of work and commit it, again after a lost race (up to
        eight attempts); its events reach the ``notifier`` once committed.

        ``InternalError`` if called from inside another transaction's or a read's ``work``: the
        inner one would commit on its own, whatever became of the outer one. Call services one
        after another, not from inside a unit of work of your own."""
        if _IN_TRANSACTION.get():
            raise InternalError(
                "A transaction cannot start inside another transaction's (or a read's) work: it "
                "would commit on its own. Call the service after it, not inside it"
            )
        inside = _IN_TRANSACTION.set(True)
        try:
            return self._transaction(work)
        finally:
            _IN_TRANSACTION.reset(inside)

    def _transaction(self, work: Callable[[Tx], T]) -> T:
        batch = _BATCH.get()
        if batch is not None and batch.runtime is not self:
            batch = None
        for attempt in range(_ATTEMPTS):
            if attempt:
                self.pause(attempt - 1)
            try:
                with self._write_unit_of_work() as opened:
                    uow = checking(opened, _check_of(self))
                    tx = Tx(
                        uow=uow,
                        now=self.clock.now(),
                        ids=self.ids,
                        session_lifetime=self.session_lifetime,
                        outbox_for_webhooks=self.outbox_for_webhooks,
                    )
                    result = work(tx)
                    uow.commit()
            except ConcurrentWrite:
                if batch is not None:
                    raise  # not retried while holding the batch (see :meth:`batch`)
                continue
            shared = _SHARED_READ.get()
            if shared is not None and shared.runtime is self:
                shared.end()  # a later read of the block must see this write (a new snapshot)
            if tx.emitted:
                if batch is not None:
                    batch.emitted.extend(tx.emitted)
                else:
                    self._tell_notifier(tx.emitted)
            return result
        raise Conflict("The request collided with concurrent writes; retry it", code="state_conflict")

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Run this thread's transactions inside the block as one write batch of the store
        (:attr:`write_batch`; ``InternalError`` where it has none), committed together when the
        block ends.

        Inside the block each transaction has a savepoint of its own, so one that fails undoes
        only its own writes, but it returns before it is durable, and other connections see
        none of the batch before its end. So whoever runs writes in a batch:

        - answers for none of them before the block has ended normally, and runs them again,
          each alone, if it raised (its commit failed: nothing of it was written);
        - runs again alone, after the block, any transaction that raised
          :class:`~refcore.errors.ConcurrentWrite` in it: inside the block a lost race (a
          unique key taken by another process, a deadlock, a lock not granted in time) is not
          retried, for the retry would wait while holding the batch's locks;
        - batches only writes that read nothing after their transaction (a read on another
          connection would not see it yet).

        The ``notifier`` hears of the batch's events once it is committed.
        """
        if self.write_batch is None:
            raise InternalError("This store has no write batches")
        if _BATCH.get() is not None:
            raise InternalError("A write batch is already open here")
        batch = _Batch(self)
        token = _BATCH.set(batch)
        try:
            with self.write_batch():
                yield
        finally:
            _BATCH.reset(token)
        if batch.emitted:
            self._tell_notifier(batch.emitted)

    def _tell_notifier(self, events: Sequence[Event]) -> None:
        """Tell the notifier of committed events; its failure is logged, never raised.

        The write has committed by now: raising would tell the caller it failed, and a retry of
        a write that is not a replay (a mark-paid, a new affiliate) would then be refused or
        doubled. The events are in the outbox whatever the notifier does; a dispatcher's poll
        finds them without it."""
        try:
            self.notifier.events_committed(tuple(events))
        except Exception:
            logger.exception("the event notifier failed after a commit; its events stay in the outbox")

    @contextmanager
    def _write_unit_of_work(self) -> Iterator[UnitOfWork]:
        """A unit of work of its own, or the one a :meth:`read_then_write` block's reads opened
        (its first transaction only; a retry after a lost race starts afresh)."""
        shared = _SHARED_WRITE.get()
        if shared is not None and shared.runtime is self and shared.open and not shared.reading_now:
            with shared.writing() as opened:
                if opened is not None:
                    yield opened
                    return
        with self.unit_of_work() as uow:
            yield uow

    def read(self, work: Callable[[Tx], T], *, snapshot: bool = False) -> T:
        """A read-only unit of work: nothing is committed. Inside :meth:`shared_read`, the
        block's unit of work, with a ``now`` of this read's own; inside :meth:`read_then_write`,
        the unit of work the block's transaction will commit.

        With ``snapshot``, every statement of ``work`` sees the database as of one moment, on
        every store: for an answer whose figures are read by several statements and must agree
        with each other (an overview's totals, a CSV of every ready payout, a batch and its
        payouts). The memory store's and SQLite's reads always do, a block's included, and
        ``snapshot`` changes nothing there. PostgreSQL's read each statement's own (``READ
        COMMITTED``, which saves a round trip), so there the work runs in a ``REPEATABLE READ
        READ ONLY`` transaction (:attr:`snapshot_unit_of_work`) of its own, never in a block's,
        whose idle unit of work ends first, so that a thread holds one connection at a time.

        A read that fails with :class:`~refcore.errors.ConcurrentWrite` runs again, in a new
        unit of work, if its own ended with the failure (not when a read around it in the same
        block still holds it), up to eight runs as a transaction. A read races no one, but a
        store may still say so: on PostgreSQL a statement prepared on the connection before a
        migration changed a column's type (``refcore_sqlstore.errors``), whose connection is
        discarded with the failure; the next run may take another connection prepared before the
        migration too (probe K saw two reads fail after one run again), so one more run was not
        enough."""
        shared = self._shared_for_read()
        snapshot = snapshot and self.snapshot_unit_of_work is not None
        if snapshot:
            self._end_idle(shared)
            shared = None
        try:
            return self._read_in(shared, work, snapshot=snapshot)
        except ConcurrentWrite:
            if shared is not None and shared.holds_unit_of_work:
                raise
        return self._read_again(work, snapshot=snapshot)

    @staticmethod
    def _end_idle(shared: _SharedRead | None) -> None:
        """End the block's unit of work before a snapshot read opens its own, when no read of
        the block is using it (the block's next read opens another): otherwise a keyed ``GET``
        held two of the pool's connections at once, its key's and its snapshot's, and with a
        pool of one waited out the pool's timeout."""
        if shared is not None and shared.holds_unit_of_work and not shared.reading_now:
            shared.end()

    def _read_again(self, work: Callable[[Tx], T], *, snapshot: bool) -> T:
        """The runs of :meth:`read` after its first failed (kept out of the first run's path)."""
        for retry in range(_ATTEMPTS - 1):
            self.pause(retry)
            shared = None if snapshot else self._shared_for_read()
            try:
                return self._read_in(shared, work, snapshot=snapshot)
            except ConcurrentWrite:
                if retry == _ATTEMPTS - 2 or (shared is not None and shared.holds_unit_of_work):
                    raise
        raise InternalError("unreachable: the last run returned or raised")

    def _shared_for_read(self) -> _SharedRead | None:
        """The block whose unit of work a read joins now, if any (see :meth:`read`)."""
        shared_write = _SHARED_WRITE.get()
        if shared_write is not None and shared_write.runtime is self and shared_write.open:
            return shared_write
        shared = _SHARED_READ.get()
        return shared if shared is not None and shared.runtime is self else None

    def _read_in(self, shared: _SharedRead | None, work: Callable[[Tx], T], *, snapshot: bool = False) -> T:
        opened: AbstractContextManager[UnitOfWork]
        if isinstance(shared, _SharedWrite):
            opened = shared.reading(self.unit_of_work)
        elif shared is not None:
            opened = shared.reading(self.read_unit_of_work or self.unit_of_work)
        elif snapshot and self.snapshot_unit_of_work is not None:
            opened = self.snapshot_unit_of_work()
        else:
            opened = (self.read_unit_of_work or self.unit_of_work)()
        with opened as uow:
            uow = checking(uow, _check_of(self))
            # A write inside the read's work would commit on its own, as inside a transaction's
            # (probe R: an organization created in a read callback stayed when it then raised).
            inside = _IN_TRANSACTION.set(True)
            try:
                return work(
                    Tx(uow=uow, now=self.clock.now(), ids=self.ids, session_lifetime=self.session_lifetime)
                )
            finally:
                _IN_TRANSACTION.reset(inside)

    @contextmanager
    def shared_read(self) -> Iterator[None]:
        """Let every :meth:`read` of this runtime inside the block (in this thread or task)
        share one read-only unit of work, opened by the first read and ended with the block.

        A keyed ``GET`` reads twice, the credential and then what it asked for, and each unit
        of work costs a pooled connection's checkout and return, its ``BEGIN`` and its end, and
        on PostgreSQL the pool's liveness round trip: about as much as the credential's lookup
        itself. The reads see the data as of the block's first read (SQLite) or as of each
        statement (PostgreSQL, READ COMMITTED), as separate reads microseconds apart would.
        :meth:`transaction` is not affected: writes always run in a unit of work of their own,
        and a write committed inside the block ends the shared unit of work, so that the reads
        after it see it.
        """
        with _sharing(_SHARED_READ, _SharedRead(self)):
            yield

    @contextmanager
    def read_then_write(self) -> Iterator[None]:
        """Let the reads of this block (in this thread or task) and the first
        :meth:`transaction` after them share one unit of work, which the transaction commits,
        where the store allows it (:attr:`reads_join_writes`); elsewhere the block changes
        nothing.

        A keyed write reads its credential, then writes: on PostgreSQL the credential's read had
        a unit of work of its own (a pooled connection's checkout and return, autocommit), 5 %
        of refcore's instructions for a payment (``bench/history.md``, twenty-first session). In
        the block the read runs on the write's connection instead, ahead of its ``BEGIN``
        (:mod:`refcore_sqlstore.postgres_round_trips`). Nothing the reads see changes:
        PostgreSQL reads ``READ COMMITTED``, each statement as of its start, in a transaction as
        outside one. A block whose reads are not followed by a transaction (the key was
        refused, the input was wrong) ends its unit of work without committing; a transaction
        that loses a race runs again in a unit of work of its own.
        """
        if not self.reads_join_writes:
            yield
            return
        shared = _SharedWrite(self)
        try:
            with _sharing(_SHARED_WRITE, shared):
                yield
        except Exception as error:
            # A refusal of the check takes the place of the block's own error (the refusal
            # itself may be that error: then it is on its way out already).
            if shared.check is not None and error is not shared.check.raised:
                self._answer(shared.check)
            raise
        if shared.check is not None:
            self._answer(shared.check)

    def check_with_first_read(self, lookup: Lookup[Any], refusal: Callable[[], RefcoreError]) -> bool:
        """Let ``lookup``, which must find a record (else ``refusal()`` is raised), ride with
        the first read of the :meth:`read_then_write` block running now, instead of a read of
        its own (:mod:`refcore.services.first_read_checks`). Returns ``False``, taking nothing,
        outside such a block: the caller then reads it itself.

        Every unit of work of the block answers the check with its first lookup, or before
        its first write or its commit, and the block does not end, normally or with an error,
        before the check is answered: a refusal then takes the place of the block's own error.
        So nothing is committed, and a caller that answers only once the block has ended
        answers nothing, that the check would have refused."""
        shared = _SHARED_WRITE.get()
        if shared is None or shared.runtime is not self or shared.check is not None:
            return False
        shared.check = FirstReadCheck(lookup, refusal)
        return True

    def _answer(self, check: FirstReadCheck) -> None:
        """Answer ``check`` if nothing of the block did, in a read of its own."""
        if check.pending:
            self.read(lambda tx: check.answer(tx.uow))
        check.refuse_if_refused()
