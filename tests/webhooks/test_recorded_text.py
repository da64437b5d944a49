"""What a receiver sends back is recorded on every store: no NUL, no unpaired surrogate.

PostgreSQL refuses a NUL in a ``text`` column (``psycopg.DataError``). Before the outcome's text
was made recordable at its source, a receiver answering ``ok\\x00ok`` made the delivery record
fail; its event stayed claimed and was sent again after every 60 s lease, forever, where the rule
is one attempt and no retry (interface 8, decisions 7).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import DeliveryStatus, Event
from refcore.ports import EventOutbox
from refcore.services.runtime import Runtime
from refcore_http.webhooks.delivery import Deliverer, Outcome, recordable
from refcore_http.webhooks.dispatcher import LEASE_SECONDS, WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox, memory_runtime
from tests.contract.scenario import World, build_world
from tests.stores import emptied_postgres_store, fresh_sqlite_store
from tests.webhooks.conftest import run
from tests.webhooks.receiver import Receiver
from tests.webhooks.world import configure, deliveries

STORES = ("memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres))


@contextmanager
def _store(name: str, clock: ManualClock) -> Iterator[tuple[Runtime, EventOutbox]]:
    if name == "memory":
        database = MemoryDatabase()
        yield memory_runtime(clock=clock, database=database), MemoryOutbox(database)
        return
    opened = fresh_sqlite_store() if name == "sqlite" else emptied_postgres_store()
    with opened as store:
        yield store.runtime(clock=clock), store.outbox


def _events(world: World) -> list[Event]:
    return world.rt.read(lambda tx: tx.uow.events.find_all({"app_id": world.app.id}))


class NulDeliverer:
    """Answers every request with an outcome whose every text holds a NUL and a lone surrogate."""

    def __init__(self) -> None:
        self.sent = 0

    async def deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> Outcome:
        self.sent += 1
        return Outcome(
            succeeded=False,
            duration_ms=1,
            http_status=500,
            error="HTTP 500 \x00 from \ud800 the receiver",
            response_body="bad\x00body\udfff",
        )


@pytest.mark.parametrize("store", STORES)
def test_a_response_body_with_a_nul_is_recorded_with_u_fffd_and_the_event_is_sent_once(
    store: str, receiver: Receiver, box: SecretBox, deliverer: Deliverer
) -> None:
    clock = ManualClock(datetime.now(UTC))
    with _store(store, clock) as (rt, outbox):
        world = build_world(rt, clock, hold_days=0)
        receiver.secret = configure(world, box, receiver.url("/nul")).secret
        world.add_affiliate()
        dispatcher = WebhookDispatcher(rt, outbox, box, deliverer)

        run(dispatcher.drain())
        clock.advance(timedelta(seconds=LEASE_SECONDS + 1))  # a claim left behind would be taken again
        assert run(dispatcher.drain()) == 0

        [record] = deliveries(world)
        assert record.status is DeliveryStatus.SUCCEEDED
        assert record.response_body == "ok\ufffdok"
        assert all(e.delivered_at is not None for e in _events(world))
        assert len(receiver.hits("/nul")) == 1


@pytest.mark.parametrize("store", STORES)
def test_error_text_and_body_with_nul_and_lone_surrogates_are_recorded_and_the_event_closed(
    store: str, box: SecretBox
) -> None:
    clock = ManualClock(datetime.now(UTC))
    with _store(store, clock) as (rt, outbox):
        world = build_world(rt, clock, hold_days=0)
        configure(world, box, "https://hooks.example.com/in")
        world.add_affiliate()
        sender = NulDeliverer()
        dispatcher = WebhookDispatcher(rt, outbox, box, cast(Deliverer, sender))

        run(dispatcher.drain())
        clock.advance(timedelta(seconds=LEASE_SECONDS + 1))
        assert run(dispatcher.drain()) == 0

        [record] = deliveries(world)
        assert record.error == "HTTP 500 \ufffd from \ufffd the receiver"
        assert record.response_body == "bad\ufffdbody\ufffd"
        assert all(e.delivered_at is not None for e in _events(world))
        assert sender.sent == 1


def test_recordable_replaces_only_nul_and_unpaired_surrogates() -> None:
    assert recordable(None) is None
    assert recordable("") == ""
    plain = "ok ✓ 💩 \ufffd tab\tnew\nline"
    assert recordable(plain) is plain
    assert recordable("\x00a\x00") == "\ufffda\ufffd"
    assert recordable("\ud83d\udca9") == "\ufffd\ufffd"  # a pair of surrogates is two lone ones in a str
    assert Outcome(succeeded=True, duration_ms=0, error="\x00", response_body="\x00").error == "\ufffd"
    assert Outcome(succeeded=True, duration_ms=0, response_body="a\x00").response_body == "a\ufffd"
