"""A delivery is decided against the endpoint as it is right before the request.

The dispatcher used to read each App's endpoint once per claimed batch (up to 64 events) and use
that snapshot for every attempt of the batch, so for seconds after a change: a rotated secret
still signed deliveries (docs/webhooks.md: rotation applies "at once"), a disabled or removed
endpoint still received requests ("a disabled or removed endpoint gets none"), requests went to
the old URL, and types unsubscribed from were still sent. Here two events are claimed in one
pass, the first request is held, the endpoint changes, and the second attempt must see the change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast

import attrs
import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import Event
from refcore.ports.unit_of_work import UnitOfWork
from refcore.services import webhooks as webhook_service
from refcore.services.runtime import Runtime
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.dispatcher import CLAIM_BATCH, WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox
from tests.contract.scenario import World
from tests.webhooks.conftest import run
from tests.webhooks.receiver import verification_problems
from tests.webhooks.spies import HeldDeliverer, until
from tests.webhooks.test_dispatcher import RecordingOutbox
from tests.webhooks.world import configure, deliveries

URL = "https://hooks.example.com/in"
NEW_URL = "https://hooks.example.net/moved"


def _events(world: World) -> list[Event]:
    return world.rt.read(lambda tx: tx.uow.events.find_all({"app_id": world.app.id}))


def _rotate(world: World, box: SecretBox) -> str | None:
    return webhook_service.rotate_secret(world.rt, world.session, box, world.app.id).secret


def _disable(world: World, box: SecretBox) -> str | None:
    configure(world, box, URL, disabled=True)
    return None


def _remove(world: World, box: SecretBox) -> str | None:
    webhook_service.remove_endpoint(world.rt, world.session, world.app.id)
    return None


def _move(world: World, box: SecretBox) -> str | None:
    configure(world, box, NEW_URL)
    return None


def _unsubscribe(world: World, box: SecretBox) -> str | None:
    configure(world, box, URL, events=["referral.created"])
    return None


Change = Callable[[World, SecretBox], str | None]


def _second_attempt_after(
    change: Change, world: World, box: SecretBox, database: MemoryDatabase
) -> tuple[HeldDeliverer, str, str | None, list[Event]]:
    """Configure, commit two events, let one pass claim both, hold the first request, change the
    endpoint, then let everything go. Returns the deliverer, the first secret, the secret the
    change revealed (if any) and the two events."""
    first_secret = configure(world, box, URL).secret
    assert first_secret is not None
    world.add_affiliate()
    world.add_affiliate()
    due = [e for e in _events(world) if e.type.value == "affiliate.created"][-2:]
    held = HeldDeliverer()
    dispatcher = WebhookDispatcher(
        world.rt, MemoryOutbox(database), box, cast(Deliverer, held), concurrency=1, claim_batch=8
    )

    async def scenario() -> str | None:
        draining = asyncio.create_task(dispatcher.drain())
        assert await until(lambda: held.unanswered() == 1)
        assert dispatcher.pending == 2  # both claimed: the second waits for the slot
        revealed = await asyncio.to_thread(change, world, box)
        held.open()
        await asyncio.wait_for(draining, timeout=10)
        return revealed

    revealed = run(scenario())
    return held, first_secret, revealed, due


def test_a_rotated_secret_signs_the_very_next_attempt_of_an_event_already_claimed(
    world: World, box: SecretBox, database: MemoryDatabase
) -> None:
    held, old_secret, new_secret, (first, second) = _second_attempt_after(_rotate, world, box, database)

    assert new_secret is not None and new_secret != old_secret
    assert [r.event_id for r in held.requests] == [first.id, second.id]
    request = held.requests[1]
    assert verification_problems(new_secret, request.headers, request.body, time.time()) == []
    assert "signature" in verification_problems(old_secret, request.headers, request.body, time.time())
    assert len(deliveries(world)) == 2


@pytest.mark.parametrize(
    "change", [_disable, _remove, _unsubscribe], ids=["disabled", "removed", "unsubscribed"]
)
def test_an_endpoint_disabled_removed_or_unsubscribed_after_the_claim_gets_no_request(
    change: Change, world: World, box: SecretBox, database: MemoryDatabase
) -> None:
    held, _, _, (first, second) = _second_attempt_after(change, world, box, database)

    assert [r.event_id for r in held.requests] == [first.id]
    assert second.id not in {d.event_id for d in deliveries(world)}
    assert [d.event_id for d in deliveries(world)] == [first.id]  # no record: closed like a quiet event
    assert all(e.delivered_at is not None for e in _events(world))


def test_a_changed_url_receives_the_next_attempt_and_the_record_names_it(
    world: World, box: SecretBox, database: MemoryDatabase
) -> None:
    held, _, _, (first, second) = _second_attempt_after(_move, world, box, database)

    assert [(r.event_id, r.url) for r in held.requests] == [(first.id, URL), (second.id, NEW_URL)]
    urls = {d.event_id: d.url for d in deliveries(world)}
    assert urls == {first.id: URL, second.id: NEW_URL}


class CountingUnitsOfWork:
    """Counts the runtime's read and write units of work."""

    def __init__(self, rt: Runtime) -> None:
        self.reads = 0
        self.writes = 0
        read, write = rt.read_unit_of_work or rt.unit_of_work, rt.unit_of_work

        def counted_read() -> UnitOfWork:
            self.reads += 1
            return read()

        def counted_write() -> UnitOfWork:
            self.writes += 1
            return write()

        self.runtime = attrs.evolve(rt, read_unit_of_work=counted_read, unit_of_work=counted_write)


def test_events_no_endpoint_wants_still_cost_one_claim_one_endpoint_read_and_one_close_a_pass(
    world: World, box: SecretBox, database: MemoryDatabase, clock: ManualClock
) -> None:
    """The quiet path (what the benchmarks' payments take): re-reading the endpoint before each
    request must not turn into a read per quiet event."""
    for _ in range(20):
        world.add_affiliate()  # no endpoint: every event is quiet
    undelivered = [e.id for e in _events(world) if e.delivered_at is None]
    counting = CountingUnitsOfWork(world.rt)
    outbox = RecordingOutbox(database)
    dispatcher = WebhookDispatcher(counting.runtime, outbox, box, cast(Deliverer, HeldDeliverer()))

    assert run(dispatcher.run_once()) == len(undelivered)

    assert outbox.limits == [CLAIM_BATCH]
    assert [sorted(batch) for batch in outbox.closed_batches] == [sorted(undelivered)]
    assert (counting.reads, counting.writes) == (1, 0)
