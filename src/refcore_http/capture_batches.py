"""Captures that arrive together are recorded together: one worker hop, one unit of work, one commit.

A capture is the busiest write there is (a click on every landing page) and the smallest: one
row. Recorded one request at a time, each paid a thread hop, a unit of work, a link lookup, an
insert and its share of a commit, about 0.33 ms of CPU on the benchmark machine against 0.12 ms
for the whole ceiling request (``docs/performance.md``). Here a validated capture waits on the
event loop instead; the first one starts a batch, and every capture that arrives while a batch
is being written waits for the next, which takes them all (up to :data:`MAX_BATCH`). Under load
the batches grow by themselves, with no timer.

Before it takes a batch, the writer lets the event loop run a few passes, until
:data:`QUIET_PASSES` passes in a row bring no new capture (at most :data:`MAX_GATHERING_PASSES`).
A request's bytes are read in one pass and its handler reaches :meth:`CaptureBatches.record` in
a later one, and the answers of the batch just written go out in a pass of their own; taking the
batch at once split every burst in two. Under wrk's 32 connections the batches alternated
between about 30 captures and the 1 to 4 that had come in during the write (16 on average),
and a batch's fixed cost (its unit of work, ``BEGIN``, link lookup, ``COMMIT`` and the log's
``fsync``: about 0.19 ms of CPU) was paid twice per burst. With the passes the batches hold 32
and a capture costs 12 % less CPU (``bench/history.md``, twentieth session). A lone capture waits
three passes of an idle loop, a few microseconds.

Each capture still gets its own answer, and only after the batch's commit, so an acknowledged
click is a durable one. An unknown link, or a server capture's failing key, fails its own
capture only (:func:`refcore.services.tracking.record_captures`). If the batch's unit of work fails as a
whole (a database error), its captures are recorded again one by one, so a capture that cannot
be written fails alone.

State is per event loop: a server has one, but tests start several, one after another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from refcore.errors import RefcoreError
from refcore.models import Click
from refcore.services.tracking import PendingCapture
from refcore_http.workers import WorkerThreads

#: Captures recorded in one unit of work at most; more waiting ones go in the next batch.
MAX_BATCH = 128
#: Passes of the event loop in a row that bring no new capture before the writer takes a batch.
QUIET_PASSES = 3
#: Passes the writer waits at most before it takes a batch, however many captures keep coming.
MAX_GATHERING_PASSES = 16

#: :func:`refcore.services.tracking.record_captures` bound to the app's runtime.
Recorder = Callable[[Sequence[PendingCapture]], list[Click | RefcoreError]]
_Waiting = tuple[PendingCapture, "asyncio.Future[Click]"]


class CaptureBatches:
    """Records captures awaited on an event loop in batches (see the module docstring)."""

    def __init__(self, record: Recorder, workers: WorkerThreads, *, max_batch: int = MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._record = record
        self._workers = workers
        self._max_batch = max_batch
        #: Per event loop: the captures waiting for the next batch, and the task writing them.
        self._waiting: dict[asyncio.AbstractEventLoop, list[_Waiting]] = {}
        self._writers: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    async def record(self, capture: PendingCapture) -> Click:
        """The capture's click once it is committed; ``link_not_found`` for an unknown link, and
        for a server capture ``unauthenticated`` or ``forbidden`` when its key fails."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Click] = loop.create_future()
        waiting = self._waiting.get(loop)
        if waiting is None:
            waiting = self._waiting[loop] = []
            self._writers[loop] = loop.create_task(self._write(loop, waiting))
        waiting.append((capture, future))
        return await future

    async def _write(self, loop: asyncio.AbstractEventLoop, waiting: list[_Waiting]) -> None:
        """Write batches until nobody waits, then leave (the next capture starts a new writer)."""
        batch: list[_Waiting] = []
        try:
            while waiting:
                await self._gather(waiting)
                batch = waiting[: self._max_batch]
                del waiting[: self._max_batch]
                await self._write_batch(batch)
            batch = []
        finally:
            del self._waiting[loop]
            del self._writers[loop]
            # Only when the writer itself was stopped (its loop closing): nobody is left hanging.
            for _, future in (*batch, *waiting):
                future.cancel()

    async def _gather(self, waiting: list[_Waiting]) -> None:
        """Let the captures already on their way join the batch (see the module docstring)."""
        quiet = 0
        for _ in range(MAX_GATHERING_PASSES):
            if quiet >= QUIET_PASSES or len(waiting) >= self._max_batch:
                return
            before = len(waiting)
            await asyncio.sleep(0)  # one pass of the event loop: its I/O, then the ready handlers
            quiet = quiet + 1 if len(waiting) == before else 0

    async def _write_batch(self, batch: Sequence[_Waiting]) -> None:
        captures = [capture for capture, _ in batch]
        try:
            outcomes = await self._workers.run(lambda: self._record(captures))
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0][1], exc)
                return
            # Something failed the whole unit of work: record each capture alone, so only the
            # one that cannot be written fails.
            for waiting in batch:
                await self._write_batch([waiting])
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            _settle(future, outcome)


def _settle(future: asyncio.Future[Click], outcome: Click | Exception) -> None:
    if future.cancelled():  # the client went away; its click is recorded all the same
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
