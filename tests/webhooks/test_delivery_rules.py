"""Interface 6.4 and decisions 7: 2xx within 3 s succeeds; slow, redirecting and failing receivers
fail once, never retried, never undoing the operation that produced the event."""

from __future__ import annotations

from datetime import timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import DeliveryStatus, Event
from refcore_http.webhooks.delivery import RESPONSE_BODY_LIMIT, Deliverer
from refcore_http.webhooks.dispatcher import LEASE_SECONDS, WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox
from tests.contract.scenario import World
from tests.webhooks.conftest import run
from tests.webhooks.receiver import Receiver, gzip_bomb
from tests.webhooks.world import configure, deliveries


def _pay(world: World) -> str:
    """An operation that emits one event (an unattributed payment: no commission entry)."""
    customer = world.identify(world.capture(), external_customer_id=None, email=world.affiliate.email)
    return world.pay(customer, 1_000).record.id


def _events(world: World) -> list[Event]:
    return world.rt.read(lambda tx: tx.uow.events.find_all({"app_id": world.app.id}))


def test_a_receiver_answering_after_5_s_is_a_time_out_near_3_s_and_the_payment_stays(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase, product_deliverer: Deliverer
) -> None:
    dispatcher = WebhookDispatcher(world.rt, MemoryOutbox(database), box, product_deliverer)
    receiver.secret = configure(world, box, receiver.url("/slow")).secret
    payment_id = _pay(world)

    run(dispatcher.drain())

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.FAILED
    assert record.http_status is None
    assert record.error is not None and "timed out" in record.error
    assert 2_900 <= record.duration_ms < 5_000
    assert world.rt.read(lambda tx: tx.uow.payments.get(payment_id)) is not None
    assert len(receiver.hits("/slow")) == 1


def test_a_redirect_is_a_failure_and_its_target_is_never_requested(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/redirect")).secret
    _pay(world)

    run(dispatcher.drain())

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.FAILED
    assert record.http_status == 302
    assert record.error is not None and "redirect" in record.error
    assert len(receiver.hits("/redirect")) == 1
    assert receiver.hits("/target") == []


def test_a_500_is_recorded_as_a_failure_with_its_body_and_never_retried(
    world: World,
    box: SecretBox,
    receiver: Receiver,
    dispatcher: WebhookDispatcher,
    clock: ManualClock,
) -> None:
    receiver.secret = configure(world, box, receiver.url("/error")).secret
    _pay(world)

    run(dispatcher.drain())
    clock.advance(timedelta(seconds=LEASE_SECONDS * 10))
    assert run(dispatcher.drain()) == 0

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.FAILED
    assert record.http_status == 500
    assert record.response_body == "receiver exploded"
    assert len(receiver.hits("/error")) == 1
    assert all(e.delivered_at is not None for e in _events(world))


def test_the_recorded_response_body_is_cut_at_1_kib(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/big")).secret
    _pay(world)

    run(dispatcher.drain())

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.SUCCEEDED
    assert record.response_body == "x" * RESPONSE_BODY_LIMIT


def test_a_receiver_whose_certificate_is_not_trusted_is_a_tls_failure(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase
) -> None:
    # Without REFCORE_WEBHOOK_CA_BUNDLE the test CA is unknown: verification must refuse it.
    untrusting = WebhookDispatcher(
        world.rt, MemoryOutbox(database), box, Deliverer(allow_private_networks=True)
    )
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    _pay(world)

    run(untrusting.drain())

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.FAILED
    assert record.error is not None and "certificate verification failed" in record.error
    assert receiver.hits("/ok") == []


def test_the_record_holds_status_duration_and_the_url_it_went_to(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    url = receiver.url("/ok")
    receiver.secret = configure(world, box, url).secret
    _pay(world)

    run(dispatcher.drain())

    [record] = deliveries(world)
    [event] = [e for e in _events(world) if e.id == record.event_id]
    assert record.url == url
    assert record.event_type == event.type.value
    assert record.duration_ms >= 0
    assert record.app_id == world.app.id


def test_a_compressed_answer_is_recorded_as_sent_and_never_inflated(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    """A body of a few kilobytes declared ``gzip, gzip`` inflated to gigabytes in one blocking call
    on the event loop, which froze every request of the process (probe AJ). The request now asks for
    the body as it is and reads it raw: the record keeps the first bytes that came, compressed."""
    receiver.secret = configure(world, box, receiver.url("/gzip-bomb")).secret
    _pay(world)

    run(dispatcher.drain())

    [record] = deliveries(world)
    [hit] = receiver.hits("/gzip-bomb")
    assert hit.headers.get("Accept-Encoding") == "identity"
    assert record.status is DeliveryStatus.SUCCEEDED
    sent = gzip_bomb()[:RESPONSE_BODY_LIMIT]
    assert record.response_body == sent.decode("utf-8", errors="replace").replace("\x00", "\ufffd")


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/not-modified", 304, "HTTP 304"),
        ("/multiple-choices", 300, "HTTP 300: redirects are not followed"),
    ],
)
def test_a_3xx_is_a_failure_called_a_redirect_only_when_it_is_one(
    world: World,
    box: SecretBox,
    receiver: Receiver,
    dispatcher: WebhookDispatcher,
    path: str,
    status: int,
    error: str,
) -> None:
    receiver.secret = configure(world, box, receiver.url(path)).secret
    _pay(world)

    run(dispatcher.drain())

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.FAILED
    assert (record.http_status, record.error) == (status, error)
