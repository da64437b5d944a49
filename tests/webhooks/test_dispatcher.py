"""The dispatcher: which events lead to a request, exactly-once closing, restart, waking."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import cast

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import DeliveryStatus, Event
from refcore.services import webhooks as webhook_service
from refcore.services.runtime import Runtime
from refcore_http.webhooks.delivery import Deliverer, Outcome
from refcore_http.webhooks.dispatcher import CLAIM_BATCH, CONCURRENCY, LEASE_SECONDS, WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox, memory_runtime
from tests.contract.scenario import World
from tests.webhooks.conftest import SECRET_KEY, run
from tests.webhooks.receiver import Receiver
from tests.webhooks.world import configure, deliveries, produce_every_event


def _events(world: World) -> list[Event]:
    return world.rt.read(lambda tx: tx.uow.events.find_all({"app_id": world.app.id}))


def _undelivered(world: World) -> list[Event]:
    return [e for e in _events(world) if e.delivered_at is None]


async def _until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``condition`` came true within ``seconds``, looking every 5 ms."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.005)
    return False


def _types_received(receiver: Receiver) -> list[str]:
    return [h.payload["type"] for h in receiver.received]


def test_events_of_an_app_without_endpoint_are_closed_without_a_request(
    world: World, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    world.add_affiliate()

    assert run(dispatcher.drain()) > 0

    assert not _undelivered(world)
    assert deliveries(world) == []
    assert receiver.received == []


def test_a_disabled_endpoint_gets_no_events_but_does_get_an_explicit_test(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok"), disabled=True).secret
    world.add_affiliate()
    webhook_service.send_test_event(world.rt, world.session, world.app.id)

    run(dispatcher.drain())

    assert _types_received(receiver) == ["webhook.test"]
    assert not _undelivered(world)


def test_only_subscribed_types_are_sent(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok"), events=["transaction.refunded"]).secret
    produce_every_event(world)

    run(dispatcher.drain())

    assert sorted(_types_received(receiver)) == ["transaction.refunded", "webhook.test"]
    assert not _undelivered(world)


def test_events_from_before_the_endpoint_existed_are_not_replayed_into_it(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    world.add_affiliate()  # before the endpoint: the set-up's events and this one are not sent
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    world.add_affiliate()

    run(dispatcher.drain())

    assert _types_received(receiver) == ["affiliate.created"]


def test_a_removed_endpoint_gets_nothing(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    configure(world, box, receiver.url("/ok"))
    world.add_affiliate()
    webhook_service.remove_endpoint(world.rt, world.session, world.app.id)

    run(dispatcher.drain())

    assert receiver.received == []


def test_a_secret_that_does_not_decrypt_under_the_server_key_is_recorded_without_a_request(
    world: World, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    configure(world, SecretBox("another server key, also long enough!!"), receiver.url("/ok"))
    world.add_affiliate()

    run(dispatcher.drain())

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.FAILED
    # It names the key and its fallback, and where changing the key is explained, before the
    # remedy that makes receivers change their secret.
    assert record.error is not None
    assert "REFCORE_SECRET_KEY_FALLBACK" in record.error and "docs/deployment.md" in record.error
    assert receiver.received == []


def test_a_server_whose_fallback_key_sealed_the_secret_signs_with_the_same_secret(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    """While a fleet changes REFCORE_SECRET_KEY (docs/deployment.md), a process whose key is the
    new one and whose fallback is the old one delivers what the old key sealed, signed with the
    endpoint's unchanged secret."""
    configured = configure(world, box, receiver.url("/ok"))  # sealed under SECRET_KEY
    receiver.secret = configured.secret
    world.add_affiliate()
    switched = SecretBox("the next server key, long enough for HKDF", fallback_key=SECRET_KEY)
    run(WebhookDispatcher(world.rt, MemoryOutbox(database), switched, deliverer).drain())

    assert [record.status for record in deliveries(world)] == [DeliveryStatus.SUCCEEDED]
    assert len(receiver.received) == 1 and receiver.received[0].problems == []


def test_events_committed_while_no_dispatcher_ran_are_delivered_once_after_restart(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    configured = configure(world, box, receiver.url("/ok"))
    receiver.secret = configured.secret
    produce_every_event(world)  # committed; the server "stops" before any delivery
    due = [e.id for e in _events(world) if e.created_at >= configured.endpoint.created_at]

    # A new process: a new runtime and dispatcher over the same durable store.
    restarted = memory_runtime(clock=world.clock, database=database)
    run(WebhookDispatcher(restarted, MemoryOutbox(database), SecretBox(SECRET_KEY), deliverer).drain())
    run(WebhookDispatcher(restarted, MemoryOutbox(database), SecretBox(SECRET_KEY), deliverer).drain())

    sent = [h.payload["id"] for h in receiver.received]
    assert sorted(sent) == sorted(due)  # each one, once
    assert [h.problems for h in receiver.received if h.problems] == []
    assert not _undelivered(world)


def test_an_event_claimed_by_a_process_that_crashed_is_delivered_once_after_the_lease(
    world: World,
    box: SecretBox,
    receiver: Receiver,
    database: MemoryDatabase,
    dispatcher: WebhookDispatcher,
    clock: ManualClock,
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    world.add_affiliate()
    crashed = MemoryOutbox(database).claim(now=clock.now(), limit=100, lease_seconds=LEASE_SECONDS)
    assert len(crashed) >= 1  # ...and then the process died before delivering

    assert run(dispatcher.drain()) == 0  # still leased to the dead process
    clock.advance(timedelta(seconds=LEASE_SECONDS + 1))
    run(dispatcher.drain())
    run(dispatcher.drain())

    assert _types_received(receiver) == ["affiliate.created"]


def test_two_dispatchers_on_one_store_deliver_each_event_exactly_once(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    configured = configure(world, box, receiver.url("/ok"))
    receiver.secret = configured.secret
    for _ in range(12):
        world.add_affiliate()
    produce_every_event(world)
    due = [e.id for e in _events(world) if e.created_at >= configured.endpoint.created_at]
    first = WebhookDispatcher(world.rt, MemoryOutbox(database), box, deliverer, concurrency=3, claim_batch=3)
    second = WebhookDispatcher(world.rt, MemoryOutbox(database), box, deliverer, concurrency=3, claim_batch=3)

    async def both() -> None:
        await asyncio.gather(first.drain(), second.drain())

    run(both())

    sent = [h.payload["id"] for h in receiver.received]
    assert len(sent) == len(set(sent))
    assert sorted(sent) == sorted(r.event_id for r in deliveries(world))
    assert sorted(sent) == sorted(due)


class CountingOutbox:
    """The memory outbox, telling the test when a dispatcher has looked at it."""

    def __init__(self, database: MemoryDatabase) -> None:
        self._inner = MemoryOutbox(database)
        self.claimed_once = threading.Event()

    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        try:
            return self._inner.claim(now=now, limit=limit, lease_seconds=lease_seconds)
        finally:
            self.claimed_once.set()

    def mark_delivered(self, event_id: str, *, now: datetime) -> None:
        self._inner.mark_delivered(event_id, now=now)

    def mark_all_delivered(self, event_ids: Sequence[str], *, now: datetime) -> None:
        self._inner.mark_all_delivered(event_ids, now=now)


def test_a_running_dispatcher_is_woken_by_a_commit_without_waiting_for_its_poll(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    outbox = CountingOutbox(database)
    dispatcher = WebhookDispatcher(world.rt, outbox, box, deliverer, poll_interval=3600)
    world.rt.notifier = dispatcher

    async def scenario() -> bool:
        await dispatcher.start()
        # The first pass finds the outbox empty; the next poll would be in an hour.
        await asyncio.to_thread(outbox.claimed_once.wait)
        # A request handler commits from a worker thread; the notifier wakes the loop.
        await asyncio.to_thread(world.add_affiliate)
        try:
            return await _until(lambda: bool(deliveries(world)))
        finally:
            await dispatcher.stop()

    assert run(scenario()) is True
    assert _types_received(receiver) == ["affiliate.created"]
    assert dispatcher.running is False


def test_concurrent_commits_share_wake_ups_and_none_is_lost(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    """A commit that finds a wake-up already scheduled skips its own; with no poll for an hour,
    every event of twelve concurrent writers must still be delivered, and a restarted dispatcher
    still wakes."""
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    outbox = CountingOutbox(database)
    dispatcher = WebhookDispatcher(world.rt, outbox, box, deliverer, poll_interval=3600)
    world.rt.notifier = dispatcher

    async def delivered(count: int) -> bool:
        return await _until(lambda: len(deliveries(world)) >= count)

    async def scenario() -> tuple[bool, ...]:
        await dispatcher.start()
        await asyncio.to_thread(outbox.claimed_once.wait)
        await asyncio.gather(*(asyncio.to_thread(world.add_affiliate) for _ in range(12)))
        all_delivered = await delivered(12)
        one_by_one = []
        for count in (13, 14, 15):  # each commit alone must wake the dispatcher again
            await asyncio.to_thread(world.add_affiliate)
            one_by_one.append(await delivered(count))
        await dispatcher.stop()
        await dispatcher.start()
        await asyncio.to_thread(world.add_affiliate)
        after_restart = await delivered(16)
        await dispatcher.stop()
        return (all_delivered, *one_by_one, after_restart)

    assert run(scenario()) == (True,) * 5
    assert _types_received(receiver) == ["affiliate.created"] * 16


class TimedOutbox(CountingOutbox):
    """Also keeps when each claim started (monotonic clock, in the claiming thread) and how many
    events it took."""

    def __init__(self, database: MemoryDatabase) -> None:
        super().__init__(database)
        self.claims: list[tuple[float, int]] = []

    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        started = time.monotonic()
        events = super().claim(now=now, limit=limit, lease_seconds=lease_seconds)
        self.claims.append((started, len(events)))
        return events


def test_under_a_stream_of_commits_passes_start_at_least_the_minimum_interval_apart(
    world: World, box: SecretBox, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    """Every commit wakes the dispatcher; without the interval, passes ran back to back and each
    claimed the two or three events committed during the last, three units of work apiece."""
    interval = 0.2
    outbox = TimedOutbox(database)
    dispatcher = WebhookDispatcher(
        world.rt, outbox, box, deliverer, poll_interval=3600, min_pass_interval=interval
    )
    world.rt.notifier = dispatcher
    waiting = len(_undelivered(world))

    def stream() -> None:
        for _ in range(30):
            world.add_affiliate()
            time.sleep(0.02)

    async def scenario() -> bool:
        await dispatcher.start()
        await asyncio.to_thread(outbox.claimed_once.wait)
        await asyncio.to_thread(stream)
        closed = await _until(lambda: not _undelivered(world))
        await dispatcher.stop()
        return closed

    assert run(scenario()) is True
    starts = [started for started, _ in outbox.claims]
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    # Measured in the claiming thread, so each start also carries its own hop to that thread.
    assert min(gaps) >= interval - 0.05, gaps
    assert sum(taken for _, taken in outbox.claims) == waiting + 30
    assert any(taken > 1 for _, taken in outbox.claims)  # passes gathered the stream's events


def test_a_pass_that_fills_its_batch_is_followed_at_once_and_stop_cuts_the_interval_short(
    world: World, box: SecretBox, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    """A full batch means more is probably waiting: the interval applies only to a pass that
    emptied the outbox, and stopping never waits it out."""
    for _ in range(7):
        world.add_affiliate()
    waiting = len(_undelivered(world))
    outbox = TimedOutbox(database)
    dispatcher = WebhookDispatcher(
        world.rt,
        outbox,
        box,
        deliverer,
        poll_interval=3600,
        concurrency=2,
        claim_batch=2,
        min_pass_interval=3600,
    )

    async def scenario() -> tuple[bool, bool]:
        await dispatcher.start()
        closed = await _until(lambda: not _undelivered(world))
        try:
            await asyncio.wait_for(dispatcher.stop(), timeout=10)
        except TimeoutError:
            return closed, False
        return closed, True

    assert run(scenario()) == (True, True)
    # Full passes back to back, then the one that found the rest (or nothing), then no more.
    assert [taken for _, taken in outbox.claims] == [2] * (waiting // 2) + [waiting % 2]


class RecordingOutbox(CountingOutbox):
    """Also keeps the limit of every claim and the IDs of every batch closed without a request."""

    def __init__(self, database: MemoryDatabase) -> None:
        super().__init__(database)
        self.limits: list[int] = []
        self.closed_batches: list[list[str]] = []

    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        self.limits.append(limit)
        return super().claim(now=now, limit=limit, lease_seconds=lease_seconds)

    def mark_all_delivered(self, event_ids: Sequence[str], *, now: datetime) -> None:
        self.closed_batches.append(list(event_ids))
        super().mark_all_delivered(event_ids, now=now)


def test_one_pass_claims_a_whole_claim_batch_and_closes_its_quiet_events_in_one_batch(
    world: World, box: SecretBox, database: MemoryDatabase, deliverer: Deliverer
) -> None:
    """A pass costs three units of work whatever it claims: passes of ``concurrency`` (8)
    events made the outbox as busy as the payments that filled it."""
    for _ in range(20):
        world.add_affiliate()
    undelivered = [e.id for e in _undelivered(world)]
    assert len(undelivered) > 2 * CONCURRENCY
    outbox = RecordingOutbox(database)
    dispatcher = WebhookDispatcher(world.rt, outbox, box, deliverer)

    assert run(dispatcher.run_once()) == len(undelivered)

    assert outbox.limits == [CLAIM_BATCH]
    assert [sorted(batch) for batch in outbox.closed_batches] == [sorted(undelivered)]
    assert not _undelivered(world)


class GatedDeliverer:
    """Answers every request with a success after a short wait, counting those in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most_in_flight = 0
        self.sent = 0

    async def deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> Outcome:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
        finally:
            self.in_flight -= 1
        self.sent += 1
        return Outcome(succeeded=True, duration_ms=10, http_status=200)


def test_a_pass_claiming_more_events_than_concurrency_sends_at_most_concurrency_requests_at_once(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase
) -> None:
    configure(world, box, receiver.url("/ok"))
    for _ in range(12):
        world.add_affiliate()
    gated = GatedDeliverer()
    dispatcher = WebhookDispatcher(
        world.rt,
        MemoryOutbox(database),
        box,
        cast(Deliverer, gated),
        concurrency=3,
        per_app_concurrency=3,  # one App here: let it use every slot
        claim_batch=15,
    )

    run(dispatcher.run_once())

    assert gated.sent == 12
    assert gated.most_in_flight == 3
    assert len(deliveries(world)) == 12


def test_a_lease_that_the_claimed_events_attempts_could_outlast_is_refused(
    rt: Runtime, database: MemoryDatabase, box: SecretBox, deliverer: Deliverer
) -> None:
    """64 claimed events of one App, 4 at a time (its share of 8 slots), 3 s each: the last
    attempt may end 48 s after the claim, and past its lease another dispatcher could claim and
    send that event a second time. 5 s more are kept for the endpoint reads and records."""
    with pytest.raises(ValueError, match="lease_seconds"):
        WebhookDispatcher(rt, MemoryOutbox(database), box, deliverer, lease_seconds=52, claim_batch=64)
    with pytest.raises(ValueError, match="lease_seconds"):
        WebhookDispatcher(
            rt, MemoryOutbox(database), box, deliverer, concurrency=4, lease_seconds=LEASE_SECONDS
        )  # 2 per App: 32 rounds
    with pytest.raises(ValueError, match="at least 1"):
        WebhookDispatcher(rt, MemoryOutbox(database), box, deliverer, claim_batch=0)
    with pytest.raises(ValueError, match="cannot exceed"):
        WebhookDispatcher(rt, MemoryOutbox(database), box, deliverer, concurrency=2, per_app_concurrency=3)
    assert WebhookDispatcher(rt, MemoryOutbox(database), box, deliverer, lease_seconds=53, claim_batch=64)
    assert WebhookDispatcher(rt, MemoryOutbox(database), box, deliverer) is not None  # the defaults hold
