"""A ready :class:`~refcore.services.runtime.Runtime` on a fresh in-memory database."""

from __future__ import annotations

from refcore.clocks import SystemClock
from refcore.identifiers import TimeOrderedIds
from refcore.ports import Clock, EventNotifier
from refcore.services.runtime import NullNotifier, Runtime
from refcore_memstore.database import MemoryDatabase
from refcore_memstore.unit_of_work import MemoryUnitOfWork


def memory_runtime(
    clock: Clock | None = None,
    notifier: EventNotifier | None = None,
    database: MemoryDatabase | None = None,
) -> Runtime:
    db = database or MemoryDatabase()
    clock = clock or SystemClock()
    return Runtime(
        unit_of_work=lambda: MemoryUnitOfWork(db),
        clock=clock,
        ids=TimeOrderedIds(clock),
        notifier=notifier or NullNotifier(),
    )
