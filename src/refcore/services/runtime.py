"""The runtime: the ports a service needs, and the transaction runner that every service uses.

:meth:`Runtime.transaction` opens a unit of work, runs the work, commits, and only then tells
the notifier about the events the work emitted. When a store reports a lost race
(:class:`~refcore.errors.ConcurrentWrite`, e.g. two servers inserting the same payment ID), the
work runs again from scratch and sees the winner's row, which turns a duplicate into a replay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from attrs import define, field

from refcore.errors import ConcurrentWrite, Conflict
from refcore.models import Event, EventType
from refcore.ports import Clock, EventNotifier, IdGenerator, UnitOfWork, UnitOfWorkFactory

T = TypeVar("T")

_ATTEMPTS = 5


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

    def transaction(self, work: Callable[[Tx], T]) -> T:
        for _attempt in range(_ATTEMPTS):
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
