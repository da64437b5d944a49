"""Deliveries are a pipeline: one App's slow receiver delays no other App's events.

The dispatcher used to await a whole pass of attempts before claiming again, so an event of App B
committed while App A's receiver took 2.9 s waited for it, with 7 of 8 slots free. Each test here
holds requests by hand (:class:`~tests.webhooks.spies.HeldDeliverer`) instead of timing them: B's
event must go out while A's request is still unanswered. The invariants the pipeline keeps are
tested too: claimed events stay few enough to finish within their lease, one App gets half the
slots, ``drain`` returns when all is done, and ``stop`` finishes what is in flight and leaves the
rest claimed for after the lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import cast

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import Event
from refcore.services.runtime import Runtime
from refcore_http.webhooks.delivery import TIMEOUT_SECONDS, Deliverer
from refcore_http.webhooks.dispatcher import (
    CLAIM_BATCH,
    CONCURRENCY,
    LEASE_MARGIN_SECONDS,
    LEASE_SECONDS,
    PER_APP_CONCURRENCY,
    WebhookDispatcher,
)
from refcore_memstore import MemoryDatabase, MemoryOutbox
from tests.contract.scenario import World, build_world
from tests.webhooks.conftest import run
from tests.webhooks.spies import HeldDeliverer, until
from tests.webhooks.world import configure, deliveries

A_URL = "https://a.example/hooks"
B_URL = "https://b.example/hooks"
C_URL = "https://c.example/hooks"


def _world(rt: Runtime, clock: ManualClock, box: SecretBox, url: str) -> World:
    world = build_world(rt, clock, hold_days=0)
    configure(world, box, url)
    return world


def _all_events(rt: Runtime) -> list[Event]:
    return rt.read(lambda tx: tx.uow.events.find_all({}))


def _undelivered(rt: Runtime) -> list[Event]:
    return [e for e in _all_events(rt) if e.delivered_at is None]


def test_another_apps_event_goes_out_while_a_slow_receiver_holds_its_request(
    rt: Runtime, clock: ManualClock, box: SecretBox, database: MemoryDatabase
) -> None:
    a, b = _world(rt, clock, box, A_URL), _world(rt, clock, box, B_URL)
    held = HeldDeliverer()
    held.open(B_URL)  # B's receiver answers at once; A's holds every request until released
    dispatcher = WebhookDispatcher(rt, MemoryOutbox(database), box, cast(Deliverer, held), poll_interval=3600)
    rt.notifier = dispatcher

    async def scenario() -> tuple[bool, bool, bool, bool]:
        await dispatcher.start()
        await asyncio.to_thread(a.add_affiliate)
        a_out = await until(lambda: held.unanswered(A_URL) == 1)
        await asyncio.to_thread(b.add_affiliate)
        b_delivered = await until(lambda: len(deliveries(b)) == 1)
        a_still_held = held.unanswered(A_URL) == 1 and deliveries(a) == []
        held.open()
        a_delivered = await until(lambda: len(deliveries(a)) == 1)
        await dispatcher.stop()
        return a_out, b_delivered, a_still_held, a_delivered

    assert run(scenario()) == (True, True, True, True)
    assert [r.url for r in held.requests] == [A_URL, B_URL]


def test_one_app_takes_at_most_half_the_slots_and_another_apps_event_still_goes_out(
    rt: Runtime, clock: ManualClock, box: SecretBox, database: MemoryDatabase
) -> None:
    """Six events of A, whose receiver hangs: four requests (half of eight slots) go out, the
    other two wait although four slots are free, and B's event takes one of those at once."""
    a, b = _world(rt, clock, box, A_URL), _world(rt, clock, box, B_URL)
    for _ in range(6):
        a.add_affiliate()
    held = HeldDeliverer()
    held.open(B_URL)
    dispatcher = WebhookDispatcher(rt, MemoryOutbox(database), box, cast(Deliverer, held), poll_interval=3600)
    rt.notifier = dispatcher
    assert PER_APP_CONCURRENCY == CONCURRENCY // 2 == 4

    async def scenario() -> tuple[bool, bool, int, bool]:
        await dispatcher.start()
        a_share_out = await until(lambda: held.unanswered(A_URL) == PER_APP_CONCURRENCY)
        await asyncio.to_thread(b.add_affiliate)
        b_delivered = await until(lambda: len(deliveries(b)) == 1)
        a_out_while_b_went = len(held.sent(A_URL))
        held.open()
        all_delivered = await until(lambda: len(deliveries(a)) == 6)
        await dispatcher.stop()
        return a_share_out, b_delivered, a_out_while_b_went, all_delivered

    assert run(scenario()) == (True, True, PER_APP_CONCURRENCY, True)
    assert held.most_in_flight[A_URL] == PER_APP_CONCURRENCY
    assert len({r.event_id for r in held.sent(A_URL)}) == 6  # each once


class BoundCheckingOutbox:
    """The memory outbox, recording after each claim how many events are claimed and not closed."""

    def __init__(self, database: MemoryDatabase) -> None:
        self._inner = MemoryOutbox(database)
        self._database = database
        self.limits: list[int] = []
        self.unfinished_after_claim: list[int] = []

    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        claimed = self._inner.claim(now=now, limit=limit, lease_seconds=lease_seconds)
        self.limits.append(limit)
        with self._database.lock:
            events = [e for e in self._database.tables["events"].values() if isinstance(e, Event)]
        self.unfinished_after_claim.append(
            sum(1 for e in events if e.claimed_at is not None and e.delivered_at is None)
        )
        return claimed

    def mark_delivered(self, event_id: str, *, now: datetime) -> None:
        self._inner.mark_delivered(event_id, now=now)

    def mark_all_delivered(self, event_ids: Sequence[str], *, now: datetime) -> None:
        self._inner.mark_all_delivered(event_ids, now=now)


def test_claimed_but_unfinished_events_never_exceed_the_claim_batch_and_an_ended_attempt_wakes_the_loop(
    rt: Runtime, clock: ManualClock, box: SecretBox, database: MemoryDatabase
) -> None:
    """The lease bound: at most ``claim_batch`` events are claimed and unfinished, so that even
    if every receiver takes its whole time budget each finishes within its lease. Claiming stops
    while that many wait; with no poll and no commit, only an ended attempt can start the next
    pass, and every event still goes out once."""
    a = _world(rt, clock, box, A_URL)
    for _ in range(7):
        a.add_affiliate()
    outbox = BoundCheckingOutbox(database)
    held = HeldDeliverer()
    dispatcher = WebhookDispatcher(
        rt,
        outbox,
        box,
        cast(Deliverer, held),
        poll_interval=3600,
        min_pass_interval=0,
        concurrency=2,
        per_app_concurrency=2,
        claim_batch=3,
    )

    async def delivered(count: int) -> bool:
        return await until(lambda: len(deliveries(a)) == count)

    def claimed_unfinished() -> int:
        return sum(1 for e in _all_events(rt) if e.claimed_at is not None and e.delivered_at is None)

    async def scenario() -> tuple[bool, bool, list[bool]]:
        await dispatcher.start()
        both_out = await until(lambda: held.unanswered() == 2)
        # A pass claims the third while the two requests are held, then claiming stops:
        claimed_while_held = await until(lambda: claimed_unfinished() == 3)
        finished = []
        for count in range(1, 8):
            held.release()
            finished.append(await delivered(count))
        await dispatcher.stop()
        return both_out, claimed_while_held, finished

    assert run(scenario()) == (True, True, [True] * 7)
    assert max(outbox.unfinished_after_claim) <= 3
    assert all(limit <= 3 for limit in outbox.limits)
    assert len({r.event_id for r in held.requests}) == len(held.requests) == 7
    assert _undelivered(rt) == []


def test_drain_returns_only_when_every_claimable_event_is_finished(
    rt: Runtime, clock: ManualClock, box: SecretBox, database: MemoryDatabase
) -> None:
    worlds = [_world(rt, clock, box, url) for url in (A_URL, B_URL, C_URL)]
    for index in range(10):
        worlds[index % 3].add_affiliate()
    held = HeldDeliverer()
    held.open()
    dispatcher = WebhookDispatcher(
        rt, MemoryOutbox(database), box, cast(Deliverer, held), concurrency=2, claim_batch=4
    )

    assert run(dispatcher.drain()) >= 10

    assert len(held.requests) == len({r.event_id for r in held.requests}) == 10
    assert sum(len(deliveries(w)) for w in worlds) == 10
    assert _undelivered(rt) == []
    assert dispatcher.pending == 0


def test_stop_finishes_the_attempt_in_flight_and_leaves_queued_events_claimed_for_after_the_lease(
    rt: Runtime, clock: ManualClock, box: SecretBox, database: MemoryDatabase
) -> None:
    a = _world(rt, clock, box, A_URL)
    for _ in range(3):
        a.add_affiliate()
    held = HeldDeliverer()
    dispatcher = WebhookDispatcher(
        rt,
        MemoryOutbox(database),
        box,
        cast(Deliverer, held),
        concurrency=1,
        claim_batch=4,
        poll_interval=3600,
    )

    async def scenario() -> tuple[bool, bool, bool]:
        await dispatcher.start()
        first_out = await until(lambda: held.unanswered() == 1)
        stopping = asyncio.create_task(dispatcher.stop())
        await asyncio.sleep(0.05)
        waited_for_it = not stopping.done()
        held.release()
        try:
            await asyncio.wait_for(stopping, timeout=10)
        except TimeoutError:
            held.open()
            return first_out, waited_for_it, False
        return first_out, waited_for_it, True

    assert run(scenario()) == (True, True, True)
    assert len(held.requests) == 1 and len(deliveries(a)) == 1
    left = _undelivered(rt)
    assert len(left) == 2 and all(e.claimed_at is not None for e in left)  # claimed, never sent

    later = HeldDeliverer()
    later.open()
    restarted = WebhookDispatcher(rt, MemoryOutbox(database), box, cast(Deliverer, later))
    assert run(restarted.drain()) == 0  # still leased
    clock.advance(timedelta(seconds=LEASE_SECONDS + 1))
    assert run(restarted.drain()) == 2
    assert sorted(r.event_id for r in held.requests + later.requests) == sorted(
        d.event_id for d in deliveries(a)
    )
    assert len(deliveries(a)) == 3


def test_an_attempt_that_could_outlast_its_events_lease_is_not_started_and_goes_out_once_after_it(
    rt: Runtime, clock: ManualClock, box: SecretBox, database: MemoryDatabase
) -> None:
    """Past the lease another dispatcher may claim the event and send it too. An attempt whose
    database work was held up so long that its request could end after the lease is not started;
    the event stays claimed, and is sent after the lease, once."""
    a = _world(rt, clock, box, A_URL)
    for _ in range(2):
        a.add_affiliate()
    held = HeldDeliverer()
    dispatcher = WebhookDispatcher(
        rt, MemoryOutbox(database), box, cast(Deliverer, held), concurrency=1, claim_batch=2
    )

    async def scenario() -> tuple[bool, bool]:
        draining = asyncio.create_task(dispatcher.drain())
        first_out = await until(lambda: held.unanswered() == 1)
        # The second event has waited for a slot this long since its claim:
        clock.advance(timedelta(seconds=LEASE_SECONDS - TIMEOUT_SECONDS - LEASE_MARGIN_SECONDS + 1))
        held.release()
        await asyncio.wait_for(draining, timeout=10)
        return first_out, True

    assert run(scenario()) == (True, True)
    assert len(held.requests) == 1
    [waiting] = _undelivered(rt)
    assert waiting.claimed_at is not None and deliveries(a)[0].event_id != waiting.id

    later = HeldDeliverer()
    later.open()
    clock.advance(timedelta(seconds=LEASE_SECONDS))
    assert run(WebhookDispatcher(rt, MemoryOutbox(database), box, cast(Deliverer, later)).drain()) == 1
    assert [r.event_id for r in later.requests] == [waiting.id]
    assert len(deliveries(a)) == 2


def test_the_default_settings_keep_every_claimed_event_within_its_lease() -> None:
    """64 claimed events of one App, 4 at a time, each taking the whole 3 s budget: the last
    ends 48 s after the claim, leaving 12 s of the 60 s lease for reads and records; the last
    starts at 45 s, before the 52 s after which no attempt starts."""
    rounds = -(-CLAIM_BATCH // PER_APP_CONCURRENCY)
    assert rounds * TIMEOUT_SECONDS == 48
    assert rounds * TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS <= LEASE_SECONDS
    assert (rounds - 1) * TIMEOUT_SECONDS <= LEASE_SECONDS - TIMEOUT_SECONDS - LEASE_MARGIN_SECONDS
