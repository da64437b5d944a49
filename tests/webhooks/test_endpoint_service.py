"""The endpoint service of interface 4.6 and decisions 11, on every store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.errors import InvalidStartingAfter, NotFound, RefcoreError, ValidationError
from refcore.models import DeliveryStatus, EventType, WebhookDelivery
from refcore.rules.webhook_subscription import SUBSCRIBABLE
from refcore.services import webhooks as svc
from refcore.services.runtime import Runtime, Tx
from tests.contract.scenario import World, build_world
from tests.stores import STORES
from tests.webhooks.conftest import SECRET_KEY

URL = "https://hooks.example.com/refcore"


@pytest.fixture(params=sorted(STORES))
def store_world(request: pytest.FixtureRequest) -> Iterator[World]:
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    with STORES[request.param](clock) as rt:
        yield build_world(rt, clock)


@pytest.fixture
def sbox() -> SecretBox:
    return SecretBox(SECRET_KEY)


def _put(world: World, box: SecretBox, **values: Any) -> svc.ConfiguredEndpoint:
    return svc.configure_endpoint(world.rt, world.session, box, world.app.id, {"url": URL, **values})


@contextmanager
def _raises(code: str) -> Iterator[None]:
    with pytest.raises(RefcoreError) as caught:
        yield
    assert caught.value.code == code, caught.value


def test_the_first_put_creates_the_endpoint_and_reveals_a_whsec_secret_once(
    store_world: World, sbox: SecretBox
) -> None:
    created = _put(store_world, sbox)
    again = _put(store_world, sbox, disabled=True)

    assert created.created is True
    assert created.secret is not None and created.secret.startswith("whsec_")
    assert again.created is False and again.secret is None
    assert again.endpoint.id == created.endpoint.id
    assert again.endpoint.secret_ciphertext == created.endpoint.secret_ciphertext
    assert svc.signing_secret(sbox, again.endpoint) == created.secret
    shown = svc.represent_endpoint(svc.get_endpoint(store_world.rt, store_world.session, store_world.app.id))
    assert "secret" not in shown
    assert shown["disabled"] is True


def test_omitted_events_mean_every_subscribable_type_and_webhook_test_is_not_one(
    store_world: World, sbox: SecretBox
) -> None:
    shown = svc.represent_endpoint(_put(store_world, sbox).endpoint)
    assert shown["events"] == [t.value for t in SUBSCRIBABLE]
    assert "webhook.test" not in shown["events"]
    assert len(shown["events"]) == len(EventType) - 1


def test_selected_events_are_stored_and_a_put_without_events_selects_all_again(
    store_world: World, sbox: SecretBox
) -> None:
    chosen = _put(store_world, sbox, events=["payout.ready", "affiliate.created", "payout.ready"])
    assert svc.represent_endpoint(chosen.endpoint)["events"] == ["affiliate.created", "payout.ready"]
    reset = _put(store_world, sbox)
    assert svc.represent_endpoint(reset.endpoint)["events"] == [t.value for t in SUBSCRIBABLE]


def test_a_put_field_sent_as_null_takes_its_default_like_an_omitted_one(
    store_world: World, sbox: SecretBox
) -> None:
    """docs/webhooks.md: PUT replaces the whole configuration, so ``null`` is the default."""
    chosen = _put(store_world, sbox, events=["payout.ready"], disabled=True)
    assert chosen.endpoint.disabled is True
    assert svc.represent_endpoint(chosen.endpoint)["events"] == ["payout.ready"]
    reset = _put(store_world, sbox, events=None, disabled=None)
    assert reset.endpoint.disabled is False
    assert svc.represent_endpoint(reset.endpoint)["events"] == [t.value for t in SUBSCRIBABLE]


@pytest.mark.parametrize(
    ("values", "param"),
    [
        ({"url": "http://hooks.example.com/x"}, "url"),
        ({"url": "ftp://hooks.example.com/x"}, "url"),
        ({"url": "https://user:pw@hooks.example.com/x"}, "url"),
        ({"url": "https:///nohost"}, "url"),
        ({"url": "https://hooks.example.com/a b"}, "url"),
        ({"url": 42}, "url"),
        ({}, "url"),
        ({"url": URL, "events": ["webhook.test"]}, "events"),
        ({"url": URL, "events": ["no.such"]}, "events"),
        ({"url": URL, "events": []}, "events"),
        ({"url": URL, "events": "affiliate.created"}, "events"),
        ({"url": URL, "disabled": "yes"}, "disabled"),
        ({"url": URL, "secret": "whsec_mine"}, "secret"),
    ],
)
def test_invalid_configuration_is_a_validation_error_naming_the_field(
    store_world: World, sbox: SecretBox, values: dict[str, Any], param: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        svc.configure_endpoint(store_world.rt, store_world.session, sbox, store_world.app.id, values)
    assert refused.value.param == param
    with _raises("webhook_endpoint_not_found"):
        svc.get_endpoint(store_world.rt, store_world.session, store_world.app.id)


def test_rotation_reveals_a_new_secret_that_replaces_the_old_one(store_world: World, sbox: SecretBox) -> None:
    created = _put(store_world, sbox)
    rotated = svc.rotate_secret(store_world.rt, store_world.session, sbox, store_world.app.id)

    assert rotated.secret is not None and rotated.secret.startswith("whsec_")
    assert rotated.secret != created.secret
    stored = svc.get_endpoint(store_world.rt, store_world.session, store_world.app.id)
    assert svc.signing_secret(sbox, stored) == rotated.secret


def test_removal_hides_the_endpoint_destroys_its_secret_and_a_later_put_creates_a_new_one(
    store_world: World, sbox: SecretBox
) -> None:
    first = _put(store_world, sbox)
    removed = svc.remove_endpoint(store_world.rt, store_world.session, store_world.app.id)

    assert removed.secret_ciphertext == ""
    assert svc.represent_endpoint(removed)["deleted"] is True
    with _raises("webhook_endpoint_not_found"):
        svc.get_endpoint(store_world.rt, store_world.session, store_world.app.id)
    with _raises("webhook_endpoint_not_found"):
        svc.rotate_secret(store_world.rt, store_world.session, sbox, store_world.app.id)
    with _raises("webhook_endpoint_not_found"):
        svc.remove_endpoint(store_world.rt, store_world.session, store_world.app.id)

    store_world.advance(1)
    revived = _put(store_world, sbox)
    assert revived.created is True
    assert revived.secret is not None and revived.secret != first.secret
    assert revived.endpoint.created_at > first.endpoint.created_at
    assert revived.endpoint.id == first.endpoint.id  # one endpoint an App (docs/webhooks.md)


def test_the_test_event_is_livemode_false_and_needs_an_endpoint(store_world: World, sbox: SecretBox) -> None:
    with _raises("webhook_endpoint_not_found"):
        svc.send_test_event(store_world.rt, store_world.session, store_world.app.id)
    endpoint = _put(store_world, sbox).endpoint

    event = svc.send_test_event(store_world.rt, store_world.session, store_world.app.id)

    assert event.type is EventType.WEBHOOK_TEST
    assert event.livemode is False
    assert event.data["id"] == endpoint.id
    assert "secret" not in event.data
    assert store_world.events(EventType.WEBHOOK_TEST) == [event]


def test_another_organizations_session_sees_no_endpoint_and_cannot_configure_one(
    store_world: World, sbox: SecretBox
) -> None:
    _put(store_world, sbox)
    stranger = build_world(store_world.rt, store_world.clock).session

    with _raises("app_not_found"):
        svc.get_endpoint(store_world.rt, stranger, store_world.app.id)
    with _raises("app_not_found"):
        svc.configure_endpoint(store_world.rt, stranger, sbox, store_world.app.id, {"url": URL})
    with _raises("app_not_found"):
        svc.list_deliveries(store_world.rt, stranger, store_world.app.id)


def test_an_app_key_manages_its_own_apps_endpoint(store_world: World, sbox: SecretBox) -> None:
    created = svc.configure_endpoint(
        store_world.rt, store_world.key(), sbox, store_world.app.id, {"url": URL}
    )
    assert created.created is True


def _add_deliveries(rt: Runtime, app_id: str, count: int, clock: ManualClock) -> list[WebhookDelivery]:
    made: list[WebhookDelivery] = []
    for index in range(count):
        clock.advance(timedelta(seconds=1))

        def work(tx: Tx, index: int = index) -> WebhookDelivery:
            event = tx.emit(EventType.WEBHOOK_TEST, app_id=app_id, livemode=False, data={"id": "x"})
            delivery = WebhookDelivery(
                id=tx.new_id(svc.DELIVERY_PREFIX),
                app_id=app_id,
                event_id=event.id,
                event_type=event.type.value,
                status=DeliveryStatus.SUCCEEDED if index % 2 else DeliveryStatus.FAILED,
                duration_ms=10 + index,
                created_at=tx.now,
                url=URL,
                listed_in_test=True,
                listed_in_live=True,
                http_status=200 if index % 2 else None,
                error=None if index % 2 else "timed out: no response within 3 s",
            )
            tx.uow.webhook_deliveries.add(delivery)
            return delivery

        made.append(rt.transaction(work))
    return made


def test_delivery_history_pages_newest_first_with_scoped_cursors(store_world: World, sbox: SecretBox) -> None:
    made = _add_deliveries(store_world.rt, store_world.app.id, 5, store_world.clock)
    other = build_world(store_world.rt, store_world.clock)
    foreign = _add_deliveries(store_world.rt, other.app.id, 1, store_world.clock)

    first = svc.list_deliveries(store_world.rt, store_world.session, store_world.app.id, limit=2)
    rest = svc.list_deliveries(
        store_world.rt, store_world.session, store_world.app.id, limit=10, starting_after=first.data[-1].id
    )

    assert [d.id for d in first.data + rest.data] == [d.id for d in reversed(made)]
    assert (first.has_more, rest.has_more) == (True, False)
    with pytest.raises(InvalidStartingAfter):
        svc.list_deliveries(
            store_world.rt, store_world.session, store_world.app.id, starting_after=foreign[0].id
        )
    shown = svc.represent_delivery(made[0])
    assert set(shown) >= {
        "event_id",
        "event_type",
        "status",
        "http_status",
        "duration_ms",
        "error",
        "response_body",
        "created_at",
    }
    assert svc.get_delivery(store_world.rt, store_world.session, store_world.app.id, made[0].id) == made[0]
    with pytest.raises(NotFound):
        svc.get_delivery(store_world.rt, store_world.session, store_world.app.id, foreign[0].id)
