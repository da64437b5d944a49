"""The worker threads that run handlers (refcore_http.workers): results, errors, context, wake-ups."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from refcore_http.workers import WorkerThreads

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


def test_a_call_returns_its_result_from_another_thread() -> None:
    workers = WorkerThreads(max_threads=2)

    async def main() -> tuple[str, int]:
        return await workers.run(lambda: (threading.current_thread().name, 6 * 7))

    name, value = asyncio.run(main())
    assert value == 42
    assert name.startswith("refcore-worker") and name != threading.main_thread().name


def test_an_exception_reaches_the_awaiting_coroutine() -> None:
    workers = WorkerThreads(max_threads=1)

    def fail() -> None:
        raise LookupError("not here")

    async def main() -> None:
        await workers.run(fail)

    with pytest.raises(LookupError, match="not here"):
        asyncio.run(main())


def test_the_callers_context_variables_are_seen_in_the_thread() -> None:
    workers = WorkerThreads(max_threads=1)

    async def main() -> str:
        REQUEST_ID.set("req_1")
        return await workers.run(REQUEST_ID.get)

    assert asyncio.run(main()) == "req_1"


def test_threads_start_on_demand_and_never_exceed_the_maximum() -> None:
    workers = WorkerThreads(max_threads=3)
    running = 0
    most = 0
    guard = threading.Lock()

    def slow(n: int) -> int:
        nonlocal running, most
        with guard:
            running += 1
            most = max(most, running)
        time.sleep(0.01)
        with guard:
            running -= 1
        return n

    async def main() -> list[int]:
        return list(await asyncio.gather(*(workers.run(lambda n=n: slow(n)) for n in range(20))))

    assert workers.thread_count == 0
    assert asyncio.run(main()) == list(range(20))
    assert workers.thread_count == 3
    assert most == 3


def test_results_finishing_together_wake_the_loop_once() -> None:
    """The hand-back is coalesced: one loop wake-up carries every result that is waiting."""
    workers = WorkerThreads(max_threads=4)
    release = threading.Event()
    wake_ups = 0

    async def main() -> list[int]:
        nonlocal wake_ups
        loop = asyncio.get_running_loop()
        original = loop.call_soon_threadsafe

        def counting(*args: object, **kwargs: object) -> asyncio.Handle:
            nonlocal wake_ups
            wake_ups += 1
            return original(*args, **kwargs)  # type: ignore[arg-type]

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        calls = [asyncio.ensure_future(workers.run(lambda n=n: release.wait() and n)) for n in range(4)]
        await asyncio.sleep(0.05)  # all four are blocked in their threads
        # Block the loop itself while the four finish: their results pile up for one hand-back.
        release.set()
        time.sleep(0.2)
        return list(await asyncio.gather(*calls))

    assert asyncio.run(main()) == [0, 1, 2, 3]
    assert wake_ups == 1


def test_a_cancelled_caller_does_not_break_the_others() -> None:
    workers = WorkerThreads(max_threads=2)
    release = threading.Event()

    async def main() -> int:
        abandoned = asyncio.ensure_future(workers.run(lambda: release.wait()))
        await asyncio.sleep(0.02)
        abandoned.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await abandoned
        return await workers.run(lambda: 7)

    assert asyncio.run(main()) == 7


def test_at_least_one_thread_is_required() -> None:
    with pytest.raises(ValueError):
        WorkerThreads(max_threads=0)
