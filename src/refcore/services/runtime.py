"""The runtime: the ports a service needs, and the transaction runner that every service uses.

:meth:`Runtime.transaction` opens a unit of work, runs the work, commits, and only then tells
the notifier about the events the work emitted. When a store reports a lost race
(:class:`~refcore.errors.ConcurrentWrite`, e.g. two servers inserting the same payment ID), the
work runs again from scratch and sees the winner's row, which turns a duplicate into a replay.
Between attempts it pauses a random moment that doubles with each attempt: transactions that
deadlocked or collided retried at once tend to meet again (four PostgreSQL servers racing
refunds and disputes on six payments saw a request lose five immediate attempts in a row).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from attrs import define, field

from refcore.errors import ConcurrentWrite, Conflict
from refcore.models import Event, EventType
from refcore.ports import Clock, EventNotifier, IdGenerator, UnitOfWork, UnitOfWorkFactory

T = TypeVar("T")

_ATTEMPTS = 8
#: The longest pause before the first retry, in seconds; it doubles for each later one (so at
#: most 0.127 s in all before the request is refused).
_FIRST_PAUSE_SECONDS = 0.001


def pause_before_retry(retry: int) -> None:
    """Sleep up to ``_FIRST_PAUSE_SECONDS * 2**retry`` (``retry`` counts from 0), at random."""
    time.sleep(random.uniform(0, _FIRST_PAUSE_SECONDS * 2**retry))


class NullNotifier:
    def events_committed(self, events: Sequence[Event]) -> None:
        return None


@define
class Tx:
    """One running unit of work, with one ``now`` for everything it writes."""

    uow: UnitOfWork
    now: datetime
    ids: IdGenerator
    emitted: list[Event] = field(factory=list)

    def new_id(self, prefix: str) -> str:
        return self.ids.new(prefix)

    def emit(self, type: EventType, *, app_id: str, livemode: bool, data: dict[str, Any]) -> Event:
        """Write an event to the outbox inside this unit of work (it commits with the change)."""
        event = Event(
            id=self.new_id("whev"),
            app_id=app_id,
            type=type,
            livemode=livemode,
            created_at=self.now,
            data=data,
        )
        self.uow.events.add(event)
        self.emitted.append(event)
        return event


@define
class Runtime:
    unit_of_work: UnitOfWorkFactory
    clock: Clock
    ids: IdGenerator
    notifier: EventNotifier = field(factory=NullNotifier)
    #: Units of work for :meth:`read`, when the store has a cheaper read-only kind (SQLite
    #: begins them without taking the write lock); ``None`` uses ``unit_of_work``.
    read_unit_of_work: UnitOfWorkFactory | None = None
    #: Called with the retry's number (0 for the first) before running the work again.
    pause: Callable[[int], None] = pause_before_retry

    def transaction(self, work: Callable[[Tx], T]) -> T:
        for attempt in range(_ATTEMPTS):
            if attempt:
                self.pause(attempt - 1)
            try:
                with self.unit_of_work() as uow:
                    tx = Tx(uow=uow, now=self.clock.now(), ids=self.ids)
                    result = work(tx)
                    uow.commit()
            except ConcurrentWrite:
                continue
            if tx.emitted:
                self.notifier.events_committed(tuple(tx.emitted))
            return result
        raise Conflict("The request collided with concurrent writes; retry it", code="state_conflict")

    def read(self, work: Callable[[Tx], T]) -> T:
        """A read-only unit of work: nothing is committed."""
        with (self.read_unit_of_work or self.unit_of_work)() as uow:
            return work(Tx(uow=uow, now=self.clock.now(), ids=self.ids))
