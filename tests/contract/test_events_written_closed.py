"""Events no webhook request is due for are written closed where the outbox is the server's
(``Runtime.outbox_for_webhooks``, docs/webhooks.md "Which events"), on every store.

The server's outbox has one reader, the webhook dispatcher, which claimed such an event only to
close it: two more writes of its row. A library caller reads its events from the outbox itself,
so by default every event waits there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import Event, EventType
from refcore.services import webhooks
from refcore.services.runtime import Runtime
from tests.contract.scenario import World, build_world

T = EventType
BOX = SecretBox("test-only server secret key, 32+ characters long")


class Told:
    """A notifier that keeps what it was told."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def events_committed(self, events: Sequence[Event]) -> None:
        self.events.extend(events)


@pytest.fixture
def told(runtime: Runtime) -> Told:
    notifier = Told()
    runtime.notifier = notifier
    return notifier


def _server_world(runtime: Runtime, clock: ManualClock) -> World:
    runtime.outbox_for_webhooks = True
    return build_world(runtime, clock)


def _configure(world: World, **settings: object) -> None:
    world.clock.advance(timedelta(seconds=1))
    webhooks.configure_endpoint(
        world.rt, world.session, BOX, world.app.id, {"url": "https://hooks.example.com/in", **settings}
    )


def _waiting(world: World) -> list[Event]:
    return [event for event in world.events() if event.delivered_at is None]


def _pay(world: World) -> None:
    world.pay(world.referred_customer(), 10_000)


def test_events_written_closed_when_the_app_has_no_endpoint(
    runtime: Runtime, clock: ManualClock, told: Told
) -> None:
    world = _server_world(runtime, clock)
    _pay(world)

    events = world.events()
    assert {e.type for e in events} >= {T.AFFILIATE_CREATED, T.REFERRAL_CREATED, T.TRANSACTION_CREATED}
    assert all(e.delivered_at == e.created_at and e.claimed_at is None for e in events)
    assert told.events == []


def test_events_written_closed_are_still_read_back_whole(runtime: Runtime, clock: ManualClock) -> None:
    world = _server_world(runtime, clock)
    _pay(world)

    (created,) = world.events(T.TRANSACTION_CREATED)
    assert created.data["amount"] == 10_000 and created.livemode is True


def test_events_written_waiting_for_the_types_the_endpoint_takes(
    runtime: Runtime, clock: ManualClock, told: Told
) -> None:
    world = _server_world(runtime, clock)
    _configure(world, events=["transaction.created"])
    _pay(world)

    waiting = _waiting(world)
    assert [e.type for e in waiting] == [T.TRANSACTION_CREATED]
    assert told.events == waiting
    closed = [e for e in world.events() if e.delivered_at is not None]
    assert {T.REFERRAL_CREATED, T.COMMISSION_CREATED} <= {e.type for e in closed}


def test_events_written_closed_while_the_endpoint_is_disabled_but_its_test_waits(
    runtime: Runtime, clock: ManualClock
) -> None:
    world = _server_world(runtime, clock)
    _configure(world, disabled=True)
    _pay(world)
    webhooks.send_test_event(world.rt, world.session, world.app.id)

    assert [e.type for e in _waiting(world)] == [T.WEBHOOK_TEST]


def test_events_written_closed_after_the_endpoint_was_removed(runtime: Runtime, clock: ManualClock) -> None:
    world = _server_world(runtime, clock)
    _configure(world)
    webhooks.remove_endpoint(world.rt, world.session, world.app.id)
    _pay(world)

    assert _waiting(world) == []


def test_events_of_a_library_runtime_all_wait_in_the_outbox(
    runtime: Runtime, clock: ManualClock, told: Told
) -> None:
    world = build_world(runtime, clock)
    _pay(world)

    events = world.events()
    assert events and all(e.delivered_at is None for e in events)
    assert [e.id for e in told.events] == [e.id for e in events]
