"""The worker threads that run the synchronous core for the event loop, with cheap hand-backs.

The core is synchronous (its units of work block on the database), so every request's handler
runs in a worker thread while the event loop goes on parsing and answering other requests.
Starlette's ``run_in_threadpool`` does that through anyio, whose bookkeeping per call (capacity
limiter, cancel scope, one self-pipe write to wake the loop per result) cost about 0.09 ms of
CPU per request on the benchmark machine: as much as the whole ceiling request (``bench/``,
``docs/performance.md``). Here a call is one queue put and one future, and the results that
finish while the loop is busy are handed back together with one wake-up of the loop.

Threads start on demand, up to ``max_threads`` (``REFCORE_WORKER_THREADS``), and live as long
as the process (daemon threads, idle on their queue), like anyio's default pool. If the
awaiting request is cancelled the work still runs to its end in its thread and its result is
dropped.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")

#: Requests running the core at once per process. anyio's default (40) let 32 connections all
#: run at once: on two CPUs they took turns for the GIL, SQLite's write lock and PostgreSQL's
#: backends, and p99 at 32 connections was 2-4 times p50. With 8 the others wait on the loop,
#: which costs nothing (``bench/``: PostgreSQL payment p99 392 -> 140 ms, SQLite 156 -> 86 ms).
DEFAULT_MAX_THREADS = 8

_Job = tuple[contextvars.Context, Callable[[], Any], "asyncio.Future[Any]"]
_Outcome = tuple["asyncio.Future[Any]", Any, BaseException | None]


class WorkerThreads:
    """A pool of threads for blocking calls awaited from asyncio (see the module docstring)."""

    def __init__(self, max_threads: int = DEFAULT_MAX_THREADS, *, name: str = "refcore-worker") -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self._max_threads = max_threads
        self._name = name
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._queued = 0
        #: Per event loop: outcomes not yet handed back, and whether a hand-back is scheduled.
        self._finished: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}

    @property
    def max_threads(self) -> int:
        return self._max_threads

    @property
    def thread_count(self) -> int:
        """Threads started so far (they never exceed :attr:`max_threads`)."""
        return self._threads

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` in a worker thread, with the caller's context variables; its result."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        job: _Job = (contextvars.copy_context(), work, future)
        with self._lock:
            self._queued += 1
            start_thread = self._queued > self._idle and self._threads < self._max_threads
            if start_thread:
                self._threads += 1
        if start_thread:
            threading.Thread(target=self._serve, name=f"{self._name}-{self._threads}", daemon=True).start()
        self._jobs.put(job)
        return await future

    def _serve(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            context, work, future = self._jobs.get()
            with self._lock:
                self._idle -= 1
                self._queued -= 1
            try:
                outcome: _Outcome = (future, context.run(work), None)
            except BaseException as exc:  # handed to the awaiting coroutine, which re-raises it
                outcome = (future, None, exc)
            del work, context
            self._hand_back(future.get_loop(), outcome)
            del outcome, future

    def _hand_back(self, loop: asyncio.AbstractEventLoop, outcome: _Outcome) -> None:
        with self._lock:
            pending = self._finished.get(loop)
            if pending is not None:
                pending.append(outcome)  # a hand-back is already scheduled: it takes this too
                return
            self._finished[loop] = [outcome]
        try:
            loop.call_soon_threadsafe(self._deliver, loop)
        except RuntimeError:  # the loop closed: nobody awaits the result any more
            with self._lock:
                self._finished.pop(loop, None)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            outcomes = self._finished.pop(loop, [])
        for future, result, error in outcomes:
            if future.cancelled():
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


_POOLS: dict[tuple[str, int], WorkerThreads] = {}
_POOLS_GUARD = threading.Lock()


def worker_threads(max_threads: int = DEFAULT_MAX_THREADS, *, name: str = "refcore-worker") -> WorkerThreads:
    """The process's pool of this name and size, shared by every app that asks for it (one app
    per process in production; many apps, one after another, in a test run)."""
    with _POOLS_GUARD:
        pool = _POOLS.get((name, max_threads))
        if pool is None:
            pool = _POOLS[name, max_threads] = WorkerThreads(max_threads, name=name)
        return pool
