"""Work that requests hand over on the event loop, run in batches: one worker hop per batch.

A request's item waits on the loop; the first one starts a batch, and every item that arrives
while a batch is being run waits for the next, which takes them all (up to ``max_batch``).
Under load the batches grow by themselves, with no timer. Before it takes a batch, the runner
lets the event loop run a few passes, until :data:`QUIET_PASSES` passes in a row bring no new
item (at most :data:`MAX_GATHERING_PASSES`): a request's bytes are read in one pass and its
handler hands its item over in a later one, so taking the batch at once split every burst in
two (``bench/history.md``, twentieth session). A lone item waits three passes of an idle loop,
a few microseconds.

Each item gets its own outcome, and only once its whole batch has run. If the batch fails as
a whole, its items are run again one by one, so an item that cannot be run fails alone.
:mod:`refcore_http.capture_batches` and :mod:`refcore_http.write_batches` say what each batches
and why. State is per event loop: a server has one, but tests start several, one after another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from refcore_http.workers import WorkerThreads

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")

#: Passes of the event loop in a row that bring no new item before the runner takes a batch.
QUIET_PASSES = 3
#: Passes the runner waits at most before it takes a batch, however many items keep coming.
MAX_GATHERING_PASSES = 16

_Waiting = tuple[Item, "asyncio.Future[Outcome]"]


class LoopBatches(Generic[Item, Outcome]):
    """Runs items awaited on an event loop in batches (see the module docstring).

    ``run`` takes a batch in a worker thread and gives each item's outcome, in order: its
    result, or the exception that fails that item alone. An exception ``run`` raises fails the
    whole batch, whose items then run again one by one."""

    def __init__(
        self,
        run: Callable[[Sequence[Item]], Sequence[Outcome | Exception]],
        workers: WorkerThreads,
        *,
        max_batch: int,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._run = run
        self._workers = workers
        self._max_batch = max_batch
        #: Per event loop: the items waiting for the next batch, and the task running them.
        self._waiting: dict[asyncio.AbstractEventLoop, list[_Waiting[Item, Outcome]]] = {}
        self._runners: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    async def record(self, item: Item) -> Outcome:
        """The item's result once its batch has run; the exception that failed it, raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Outcome] = loop.create_future()
        waiting = self._waiting.get(loop)
        if waiting is None:
            waiting = self._waiting[loop] = []
            self._runners[loop] = loop.create_task(self._run_batches(loop, waiting))
        waiting.append((item, future))
        return await future

    async def _run_batches(
        self, loop: asyncio.AbstractEventLoop, waiting: list[_Waiting[Item, Outcome]]
    ) -> None:
        """Run batches until nobody waits, then leave (the next item starts a new runner)."""
        batch: list[_Waiting[Item, Outcome]] = []
        try:
            while waiting:
                await self._gather(waiting)
                batch = waiting[: self._max_batch]
                del waiting[: self._max_batch]
                await self._run_batch(batch)
            batch = []
        finally:
            del self._waiting[loop]
            del self._runners[loop]
            # Only when the runner itself was stopped (its loop closing): nobody is left hanging.
            for _, future in (*batch, *waiting):
                future.cancel()

    async def _gather(self, waiting: list[_Waiting[Item, Outcome]]) -> None:
        """Let the items already on their way join the batch (see the module docstring)."""
        quiet = 0
        for _ in range(MAX_GATHERING_PASSES):
            if quiet >= QUIET_PASSES or len(waiting) >= self._max_batch:
                return
            before = len(waiting)
            await asyncio.sleep(0)  # one pass of the event loop: its I/O, then the ready handlers
            quiet = quiet + 1 if len(waiting) == before else 0

    async def _run_batch(self, batch: Sequence[_Waiting[Item, Outcome]]) -> None:
        items = [item for item, _ in batch]
        try:
            outcomes = await self._workers.run(lambda: self._run(items))
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0][1], exc)
                return
            # Something failed the whole batch: run each item alone, so only the one that
            # cannot be run fails.
            for waiting in batch:
                await self._run_batch([waiting])
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            _settle(future, outcome)


def _settle(future: asyncio.Future[Outcome], outcome: Outcome | Exception) -> None:
    if future.cancelled():  # the client went away; its item was run all the same
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
