"""Captures recorded together (refcore_http.capture_batches): batching, one answer each, isolation.

The recorder here is a stand-in that the tests control, so what is asserted is the batching
itself: who goes in which batch, who gets which answer, and what happens when a batch fails.
The real recorder is tested on every store by ``tests/contract/test_capture_batches.py``, and
through the whole app at the end of this file.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import pytest

from refcore.errors import NotFound
from refcore.models import Click, Mode
from refcore.ports import UnitOfWork
from refcore.services.runtime import Runtime
from refcore.services.tracking import PendingCapture
from refcore_http.app import create_app
from refcore_http.capture_batches import MAX_GATHERING_PASSES, QUIET_PASSES, CaptureBatches
from refcore_http.settings import Settings
from refcore_http.workers import WorkerThreads
from tests.http.world import Client, Tenant, new_tenant

T = TypeVar("T")


def pending(page: str, code: str = "known") -> PendingCapture:
    return PendingCapture(
        code=code,
        caller=None,
        page=page,
        referrer=None,
        visitor_ip=None,
        visitor_user_agent=None,
    )


def click_for(capture: PendingCapture) -> Click:
    return Click(
        id=f"clk_{capture.page}",
        app_id="app_1",
        mode=Mode.LIVE,
        program_id="prg_1",
        program_affiliate_id="aff_1",
        link_id="lnk_1",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        page=capture.page,
        referrer=None,
        visitor_ip=None,
        visitor_user_agent=None,
    )


class Recorder:
    """Records every batch it is given; ``gate`` holds the first batch until it is set."""

    def __init__(self, *, poison: str | None = None) -> None:
        self.batches: list[list[str | None]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.first_started = threading.Event()
        self.poison = poison

    def __call__(self, captures: Sequence[PendingCapture]) -> list[Click | NotFound]:
        self.batches.append([capture.page for capture in captures])
        self.first_started.set()
        self.gate.wait(5)
        if any(capture.page == self.poison for capture in captures):
            raise RuntimeError("this capture cannot be written")
        return [
            click_for(capture) if capture.code == "known" else NotFound.of("link", capture.code)
            for capture in captures
        ]


async def wait_until(event: threading.Event) -> None:
    await asyncio.get_running_loop().run_in_executor(None, event.wait, 5)


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` with a time limit: a capture nobody answers fails the test, not hangs it."""
    return asyncio.run(asyncio.wait_for(main, 10))


def test_a_lone_capture_is_recorded_at_once_in_a_batch_of_its_own() -> None:
    recorder = Recorder()
    batches = CaptureBatches(recorder, WorkerThreads(2))

    click = run(batches.record(pending("a")))

    assert click.page == "a"
    assert recorder.batches == [["a"]]


def test_captures_arriving_while_a_batch_is_written_go_together_in_the_next() -> None:
    recorder = Recorder()
    recorder.gate.clear()
    batches = CaptureBatches(recorder, WorkerThreads(2))

    async def main() -> list[Click]:
        first = asyncio.ensure_future(batches.record(pending("first")))
        await wait_until(recorder.first_started)
        later = [asyncio.ensure_future(batches.record(pending(f"later-{n}"))) for n in range(5)]
        await asyncio.sleep(0.05)  # all five are waiting behind the held batch
        recorder.gate.set()
        return await asyncio.gather(first, *later)

    clicks = run(main())

    assert recorder.batches == [["first"], [f"later-{n}" for n in range(5)]]
    assert [click.page for click in clicks] == ["first"] + [f"later-{n}" for n in range(5)]


async def record_after(batches: CaptureBatches, page: str, passes: int) -> Click:
    """A capture that reaches ``record`` after ``passes`` passes of the event loop, as a request
    whose bytes are still being read and parsed does."""
    for _ in range(passes):
        await asyncio.sleep(0)
    return await batches.record(pending(page))


def test_captures_arriving_within_a_few_loop_passes_join_the_batch_being_formed() -> None:
    recorder = Recorder()
    batches = CaptureBatches(recorder, WorkerThreads(2))

    async def main() -> None:
        # Each arrives one pass after the one before: never a quiet run of QUIET_PASSES passes.
        await asyncio.gather(*(record_after(batches, str(n), passes=n) for n in range(6)))

    run(main())

    assert recorder.batches == [[str(n) for n in range(6)]]


def test_a_capture_arriving_after_quiet_loop_passes_waits_for_the_next_batch() -> None:
    recorder = Recorder()
    batches = CaptureBatches(recorder, WorkerThreads(2))

    async def main() -> None:
        await asyncio.gather(
            record_after(batches, "first", passes=0),
            record_after(batches, "late", passes=QUIET_PASSES + 2),
        )

    run(main())

    assert recorder.batches == [["first"], ["late"]]


def test_a_steady_stream_of_captures_does_not_hold_a_batch_back_beyond_the_gathering_bound() -> None:
    recorder = Recorder()
    batches = CaptureBatches(recorder, WorkerThreads(2))
    arrivals = 4 * MAX_GATHERING_PASSES

    async def main() -> None:
        # One new capture every pass, for longer than the writer may wait.
        await asyncio.gather(*(record_after(batches, str(n), passes=n) for n in range(arrivals)))

    run(main())

    assert len(recorder.batches[0]) <= MAX_GATHERING_PASSES + 1
    assert [page for batch in recorder.batches for page in batch] == [str(n) for n in range(arrivals)]


def test_a_batch_holds_at_most_max_batch_captures() -> None:
    recorder = Recorder()
    recorder.gate.clear()
    batches = CaptureBatches(recorder, WorkerThreads(2), max_batch=2)

    async def main() -> None:
        first = asyncio.ensure_future(batches.record(pending("0")))
        await wait_until(recorder.first_started)
        later = [asyncio.ensure_future(batches.record(pending(str(n)))) for n in range(1, 6)]
        await asyncio.sleep(0.05)
        recorder.gate.set()
        await asyncio.gather(first, *later)

    run(main())

    assert recorder.batches == [["0"], ["1", "2"], ["3", "4"], ["5"]]


def test_an_unknown_link_is_the_answer_of_its_own_capture_only() -> None:
    recorder = Recorder()
    batches = CaptureBatches(recorder, WorkerThreads(2))

    async def main() -> list[Click | BaseException]:
        captures = [pending("a"), pending("b", code="missing"), pending("c")]
        return await asyncio.gather(*(batches.record(c) for c in captures), return_exceptions=True)

    a, b, c = run(main())

    assert isinstance(a, Click) and a.page == "a"
    assert isinstance(b, NotFound) and b.code == "link_not_found"
    assert isinstance(c, Click) and c.page == "c"


def test_a_failed_batch_is_recorded_again_one_by_one_so_only_the_culprit_fails() -> None:
    recorder = Recorder(poison="bad")
    recorder.gate.clear()
    batches = CaptureBatches(recorder, WorkerThreads(2))

    async def main() -> list[Click | BaseException]:
        first = asyncio.ensure_future(batches.record(pending("first")))
        await wait_until(recorder.first_started)
        later = [asyncio.ensure_future(batches.record(pending(page))) for page in ("a", "bad", "c")]
        await asyncio.sleep(0.05)
        recorder.gate.set()
        return await asyncio.gather(first, *later, return_exceptions=True)

    first, a, bad, c = run(main())

    assert recorder.batches == [["first"], ["a", "bad", "c"], ["a"], ["bad"], ["c"]]
    assert isinstance(bad, RuntimeError)
    assert [click.page for click in (first, a, c) if isinstance(click, Click)] == ["first", "a", "c"]


def test_a_caller_that_goes_away_still_has_its_capture_recorded_and_others_answered() -> None:
    recorder = Recorder()
    recorder.gate.clear()
    batches = CaptureBatches(recorder, WorkerThreads(2))

    async def main() -> Click:
        first = asyncio.ensure_future(batches.record(pending("first")))
        await wait_until(recorder.first_started)
        gone = asyncio.ensure_future(batches.record(pending("gone")))
        stays = asyncio.ensure_future(batches.record(pending("stays")))
        await asyncio.sleep(0.05)
        gone.cancel()
        recorder.gate.set()
        await first
        return await stays

    assert run(main()).page == "stays"
    assert recorder.batches == [["first"], ["gone", "stays"]]


def test_nothing_is_left_behind_for_a_loop_once_its_captures_are_answered() -> None:
    batches = CaptureBatches(Recorder(), WorkerThreads(2))

    async def main() -> None:
        await asyncio.gather(*(batches.record(pending(str(n))) for n in range(3)))
        await asyncio.sleep(0)  # the writer task's last step

    run(main())
    run(main())  # a second loop gets a writer of its own

    assert batches._waiting == {} and batches._runners == {}


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        CaptureBatches(Recorder(), WorkerThreads(1), max_batch=0)


# -- through the app -----------------------------------------------------------------------------


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


def count_units_of_work(runtime: Runtime) -> list[int]:
    opened = [0]
    factory = runtime.unit_of_work

    def counting() -> UnitOfWork:
        opened[0] += 1
        return factory()

    runtime.unit_of_work = counting
    return opened


def test_concurrent_public_captures_share_units_of_work_and_each_gets_its_own_click(
    client: Client, tenant: Tenant, runtime: Runtime, settings: Settings
) -> None:
    app = create_app(runtime, settings)
    opened = count_units_of_work(runtime)
    pages = [f"https://shop.example/landing/{n}" for n in range(20)]

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://refcore.test") as http:
            return await asyncio.gather(
                *(http.post("/v1/capture", json={"via": tenant.link_code, "page": page}) for page in pages)
            )

    answers = run(main())

    assert [answer.status_code for answer in answers] == [201] * 20
    click_ids = [answer.json()["click_id"] for answer in answers]
    assert len(set(click_ids)) == 20
    stored = {click.id: click for click in runtime.read(lambda tx: tx.uow.clicks.find_all({}))}
    assert [stored[id].page for id in click_ids] == pages
    assert {stored[id].visitor_ip for id in click_ids} == {"203.0.113.9"}
    assert opened[0] < 20


def test_concurrent_server_captures_authenticate_their_key_with_the_batch(
    client: Client, tenant: Tenant, runtime: Runtime, settings: Settings
) -> None:
    """One key lookup a batch, inside its unit of work, instead of a worker hop and a read
    unit of work a request: twenty captures with one key open fewer units of work than twenty."""
    app = create_app(runtime, settings)
    opened = count_units_of_work(runtime)
    pages = [f"https://shop.example/server/{n}" for n in range(20)]
    headers = {"Authorization": f"Bearer {tenant.test_key}"}

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://refcore.test") as http:
            return await asyncio.gather(
                *(
                    http.post("/v1/capture", json={"via": tenant.link_code, "page": page}, headers=headers)
                    for page in pages
                )
            )

    answers = run(main())

    assert [answer.status_code for answer in answers] == [201] * 20
    assert {answer.json()["livemode"] for answer in answers} == {False}
    stored = {click.id: click for click in runtime.read(lambda tx: tx.uow.clicks.find_all({}))}
    assert [stored[answer.json()["click_id"]].page for answer in answers] == pages
    assert opened[0] < 20
