"""The stores every contract test runs against, by name.

Each entry builds a fresh, empty :class:`~refcore.services.runtime.Runtime` on one store for one
test and tears it down after. A new store joins the whole contract suite by adding one entry here
(and, if it needs a server, a skip-or-fail check in its factory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ContextManager

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_memstore import memory_runtime

StoreFactory = Callable[[ManualClock], ContextManager[Runtime]]


@contextmanager
def memory_store(clock: ManualClock) -> Iterator[Runtime]:
    yield memory_runtime(clock=clock)


STORES: dict[str, StoreFactory] = {
    "memory": memory_store,
}
