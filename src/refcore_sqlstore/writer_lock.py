"""SQLite writers of one process wait their turn on a lock, not in SQLite's busy handler.

Every SQLite write transaction starts with ``BEGIN IMMEDIATE`` and so holds the database's one
write lock until it ends. A second thread asking for it is refused with ``SQLITE_BUSY``, and
the driver's busy handler then *sleeps* and retries (1, 2, 5, 10 … 100 ms), unfairly: a thread
that has slept long keeps losing to newcomers, and under 32 concurrent requests some wait for
seconds (measured in ``docs/performance.md``). Queueing the threads of this process on a Python
lock first lets each one start as soon as the previous writer ends. Other processes writing the
same file still meet ``busy_timeout``, as before; PostgreSQL needs none of this (row locks).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from weakref import WeakKeyDictionary

from sqlalchemy import Engine

from refcore_sqlstore.engine import SQLITE_BUSY_TIMEOUT_SECONDS

_LOCKS: WeakKeyDictionary[Engine, threading.RLock] = WeakKeyDictionary()
_GUARD = threading.Lock()


def writer_lock(engine: Engine) -> threading.RLock | None:
    """The process's writer lock for this SQLite engine; ``None`` for other databases.

    Re-entrant: a thread that (wrongly) opens a second writer inside its first gets SQLite's
    busy timeout and error, as it would without this lock, rather than waiting forever."""
    if engine.dialect.name != "sqlite":
        return None
    with _GUARD:
        lock = _LOCKS.get(engine)
        if lock is None:
            lock = _LOCKS[engine] = threading.RLock()
        return lock


@contextmanager
def writer_turn(engine: Engine) -> Iterator[None]:
    """Hold this process's SQLite writer turn for the block (nothing on other databases)."""
    lock = writer_lock(engine)
    if lock is None:
        yield
        return
    # After the busy timeout go ahead anyway: SQLite's own busy handling decides, as before.
    acquired = lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_SECONDS)
    try:
        yield
    finally:
        if acquired:
            lock.release()
