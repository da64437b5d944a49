"""Events no webhook request is due for are written closed where the outbox is the server's
(``Runtime.outbox_for_webhooks``, docs/webhooks.md "Which events"), on every store.

The server's outbox has one reader, the webhook dispatcher, which claimed such an event only to
close it: two more writes of its row. A library caller reads its events from the outbox itself,
so by default every event waits there. Since events are judged as they are written, a new
endpoint's ``created_at`` is stamped after its creation committed (probe X's race, below), and a
failure of that stamp still answers the endpoint with its secret (probe Y).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import timedelta

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.errors import InternalError
from refcore.models import Event, EventType
from refcore.ports import UnitOfWork
from refcore.rules.webhook_subscription import should_deliver
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


class _HeldSeal(SecretBox):
    """A box whose sealing waits: the endpoint's creating transaction stays open after its
    ``now`` until the test lets it go."""

    def __init__(self) -> None:
        super().__init__("test-only server secret key, 32+ characters long")
        self.sealing = threading.Event()
        self.release = threading.Event()

    def seal(self, plaintext: str, *, context: str) -> str:
        self.sealing.set()
        assert self.release.wait(30)
        return super().seal(plaintext, context=context)


def test_events_of_a_write_that_overlapped_the_endpoints_creation_are_not_lost(
    runtime: Runtime, clock: ManualClock
) -> None:
    """A payment that began after the creating transaction's ``now`` but read before its commit
    (PostgreSQL) found no endpoint and wrote its events closed, while the endpoint's
    ``created_at`` said it took them (probe X). The endpoint's ``created_at`` is now stamped after
    its commit, so every event is either waiting or created before the endpoint."""
    world = _server_world(runtime, clock)
    customer = world.referred_customer()
    box = _HeldSeal()
    creating = threading.Thread(
        target=webhooks.configure_endpoint,
        args=(world.rt, world.session, box, world.app.id, {"url": "https://hooks.example.com/in"}),
    )
    creating.start()
    assert box.sealing.wait(30)
    clock.advance(timedelta(milliseconds=5))
    paying = threading.Thread(target=world.pay, args=(customer, 10_000))
    paying.start()
    paying.join(1)  # PostgreSQL: done; SQLite and memory: it waits for the creating writer
    clock.advance(timedelta(milliseconds=5))
    box.release.set()
    creating.join(30)
    paying.join(30)

    endpoint = world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": world.app.id}))
    assert endpoint is not None
    payment_events = world.events(T.TRANSACTION_CREATED) + world.events(T.COMMISSION_CREATED)
    assert len(payment_events) == 2
    lost = [e for e in payment_events if e.delivered_at is not None and should_deliver(endpoint, e)]
    assert lost == []


def test_an_endpoint_whose_stamp_fails_is_still_created_and_shows_its_secret(
    runtime: Runtime, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The stamp is a second transaction after the creating one committed: its failure (a lost
    connection, a failover) had answered an error for an endpoint that existed, whose secret no
    answer would ever show again (probe Y)."""
    world = _server_world(runtime, clock)
    opened = 0
    factory = runtime.unit_of_work

    def failing_after_the_first() -> UnitOfWork:
        nonlocal opened
        opened += 1
        if opened > 1:
            raise InternalError("The database could not complete the operation")
        return factory()

    failing = evolve(runtime, unit_of_work=failing_after_the_first)
    with caplog.at_level(logging.WARNING, logger="refcore.webhooks"):
        configured = webhooks.configure_endpoint(
            failing, world.session, BOX, world.app.id, {"url": "https://hooks.example.com/in"}
        )

    assert opened == 2 and configured.created and configured.secret is not None
    stored = world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": world.app.id}))
    assert stored == configured.endpoint
    (warning,) = caplog.records
    assert configured.endpoint.id in warning.getMessage() and "InternalError" in warning.getMessage()
    assert configured.secret not in caplog.text
