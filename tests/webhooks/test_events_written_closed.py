"""The server's outbox: an event no request is due for when it is written is written closed, so
the dispatcher never claims it, and an endpoint enabled again later does not get it
(docs/webhooks.md, "Which events"). The other tests of this folder run the library's runtime,
whose events all wait, as events written by a library caller or an older release do: the
dispatcher still closes those (``test_dispatcher.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import EventType
from refcore.services import webhooks as webhook_service
from refcore.services.runtime import Runtime
from refcore_http.store import open_store
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_memstore import MemoryDatabase, memory_runtime
from tests.contract.scenario import build_world
from tests.webhooks.conftest import run
from tests.webhooks.receiver import Receiver
from tests.webhooks.world import configure


@pytest.fixture
def rt(clock: ManualClock, database: MemoryDatabase) -> Runtime:
    """The runtime as the server opens it (:func:`refcore_http.store.open_store`)."""
    runtime = memory_runtime(clock=clock, database=database)
    runtime.outbox_for_webhooks = True
    return runtime


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_events_written_closed_by_the_servers_store(store: str, tmp_path: Path) -> None:
    url = "memory:" if store == "memory" else f"sqlite:///{tmp_path / 'refcore.db'}"
    opened = open_store(url, clock=ManualClock())
    try:
        opened.migrate()
        world = build_world(opened.runtime, ManualClock())
        world.pay(world.referred_customer(), 10_000)

        assert opened.runtime.outbox_for_webhooks is True
        assert opened.outbox.claim(now=world.clock.now(), limit=100, lease_seconds=60) == []
    finally:
        opened.dispose()


def test_events_written_closed_are_never_claimed_by_the_dispatcher(
    rt: Runtime, dispatcher: WebhookDispatcher, receiver: Receiver
) -> None:
    world = build_world(rt, ManualClock())
    world.pay(world.referred_customer(), 10_000)

    assert run(dispatcher.drain()) == 0
    assert receiver.received == []


def test_events_written_closed_while_disabled_stay_unsent_when_the_endpoint_is_enabled_again(
    rt: Runtime, clock: ManualClock, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    world = build_world(rt, clock, hold_days=0)
    receiver.secret = configure(world, box, receiver.url("/ok"), disabled=True).secret
    world.add_affiliate()  # affiliate.created, while disabled
    webhook_service.configure_endpoint(rt, world.session, box, world.app.id, {"url": receiver.url("/ok")})
    world.referred_customer()  # referral.created, once enabled

    assert run(dispatcher.drain()) == 1
    assert [hit.payload["type"] for hit in receiver.received] == [EventType.REFERRAL_CREATED.value]
