"""What the core alone costs per write: the service functions in-process, no HTTP, no event loop.

The ratio targets compare whole requests with the ceiling's. This measures the part of a
request that no HTTP work can remove: authenticating the key (as the server does, by
``refcore_http.auth.principal_of``) and running the write's service function (its unit of work,
statements, events and its share of the group commit), on the store the server uses, with the
CPU time of this process divided by the calls. With one caller every call commits alone; with
eight threads (the server's writer pool) they share commits as under load. On a store with
write batches (SQLite), one thread also runs them in batches of :data:`BATCH`, each key looked
up once a batch, as the server runs its batched endpoints (``refcore_http.write_batches``).
Divided into the ceiling's CPU per request, it is the highest ratio to the ceiling the write
could reach if HTTP, the thread hop and the webhook dispatcher cost nothing.

The process pins itself to the server's CPU while it measures, so the figure compares with
the server's CPU per request in the same run.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from bench.world import World
from refcore.services.access import activity_scope
from refcore.services.revenue import PaymentReport, record_payment
from refcore.services.runtime import Runtime
from refcore.services.tracking import IdentifyRequest, identify
from refcore_http.auth import principal_of, principals_shared
from refcore_http.endpoints import APP_KEY
from refcore_http.store import open_store
from refcore_http.workers import DEFAULT_MAX_THREADS
from refcore_http.write_batches import MAX_BATCH

#: One caller, then as many as the server's writer pool has by default (``REFCORE_WORKER_THREADS``).
THREADS = (1, DEFAULT_MAX_THREADS)
#: Calls in one write batch, as many as the server's batches hold at most (under wrk's 32
#: connections they hold 32).
BATCH = MAX_BATCH

Write = Callable[[int], None]


def _payment(rt: Runtime, world: World, run: str) -> Write:
    def write(n: int) -> None:
        who = principal_of(rt, APP_KEY, world.live_key)
        report = PaymentReport(
            payment_id=f"core-{run}-{n}",
            customer_id=world.customers[n % len(world.customers)],
            program_id=world.program_id,
            amount=10000,
            currency="usd",
        )
        record_payment(rt, activity_scope(who), report)

    return write


def _identify(rt: Runtime, world: World, run: str) -> Write:
    def write(n: int) -> None:
        who = principal_of(rt, APP_KEY, world.live_key)
        request = IdentifyRequest(
            click_id=world.clicks[n % len(world.clicks)],
            external_customer_id=f"core-{run}-{n}",
            email=f"core-{run}-{n}@customers.example",
        )
        identify(rt, who, activity_scope(who), request)

    return write


WRITES: dict[str, Callable[[Runtime, World, str], Write]] = {"payment": _payment, "identify": _identify}


@contextmanager
def _pinned(cpu: int | None) -> Iterator[None]:
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _cpu_ms_per_call(write: Write, *, threads: int, calls: int, first: int) -> float:
    """CPU milliseconds of this process per call, ``calls`` calls over ``threads`` threads."""
    numbers = itertools.count(first)
    guard = threading.Lock()
    failures: list[BaseException] = []

    def caller() -> None:
        while not failures:
            with guard:
                n = next(numbers)
            if n >= first + calls:
                return
            try:
                write(n)
            except BaseException as error:  # reported once all callers stopped
                failures.append(error)

    pool = [threading.Thread(target=caller, name=f"core-{i}") for i in range(threads)]
    started = time.process_time()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    spent = time.process_time() - started
    if failures:
        raise RuntimeError(f"a core write failed: {failures[0]!r}") from failures[0]
    return spent * 1000 / calls


def _cpu_ms_per_call_in_batches(rt: Runtime, write: Write, *, calls: int, first: int) -> float:
    """CPU milliseconds of this process per call, ``calls`` calls by one thread in write batches
    of :data:`BATCH`."""
    started = time.process_time()
    for start in range(first, first + calls, BATCH):
        with rt.batch(), principals_shared():
            for n in range(start, min(start + BATCH, first + calls)):
                write(n)
    return (time.process_time() - started) * 1000 / calls


def time_writes(
    database_url: str,
    world: World,
    *,
    keys: Sequence[str] = tuple(WRITES),
    calls: int,
    cpu: int | None,
    run: str,
) -> list[dict[str, Any]]:
    """Per write and thread count: ``{"scenario", "threads", "calls", "cpu_ms"}``, and with
    ``"batch"`` (its size, one thread) where the store has write batches."""
    store = open_store(database_url)
    found: list[dict[str, Any]] = []
    try:
        with _pinned(cpu):
            for key in keys:
                write = WRITES[key](store.runtime, world, run)
                for warm in range(min(50, calls)):
                    write(10_000_000 + warm)  # caches, the pool's connections, compiled statements
                for round_, threads in enumerate(THREADS):
                    cpu_ms = _cpu_ms_per_call(write, threads=threads, calls=calls, first=round_ * 1_000_000)
                    found.append({"scenario": key, "threads": threads, "calls": calls, "cpu_ms": cpu_ms})
                if store.runtime.write_batch is not None:
                    first = len(THREADS) * 1_000_000
                    cpu_ms = _cpu_ms_per_call_in_batches(store.runtime, write, calls=calls, first=first)
                    found.append(
                        {"scenario": key, "threads": 1, "batch": BATCH, "calls": calls, "cpu_ms": cpu_ms}
                    )
    finally:
        store.dispose()
    return found
