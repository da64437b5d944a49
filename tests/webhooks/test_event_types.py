"""Every event type reaches a real HTTPS receiver that verifies it exactly as interface 6.3 says."""

from __future__ import annotations

from refcore.crypto import SecretBox
from refcore.models import DeliveryStatus, EventType, Mode
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from tests.contract.scenario import World
from tests.webhooks.conftest import run
from tests.webhooks.receiver import Receiver
from tests.webhooks.world import EVERY_TYPE, configure, deliveries, produce_every_event

#: ``data.id`` names the resource of the events table (interface 6.1), by ID prefix and ``object``.
RESOURCE_OF_TYPE = {
    "affiliate.created": ("aff_", "program_affiliate"),
    "affiliate.approved": ("aff_", "program_affiliate"),
    "affiliate.disabled": ("aff_", "program_affiliate"),
    "referral.created": ("ref_", "referral"),
    "transaction.created": ("txn_", "transaction"),
    "transaction.refunded": ("txn_", "refund"),
    "commission.created": ("com_", "commission_entry"),
    "commission.reversed": ("com_", "commission_entry"),
    "commission.paid": ("com_", "commission_entry"),
    "payout.ready": ("pex_", "payout_execution"),
    "payout.succeeded": ("pex_", "payout_execution"),
    "payout.failed": ("pex_", "payout_execution"),
    "webhook.test": ("whep_", "webhook_endpoint"),
}


def test_every_producible_event_type_arrives_once_with_valid_headers_and_signature(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    configured = configure(world, box, receiver.url("/ok"))
    receiver.secret = configured.secret
    produce_every_event(world)
    due = [e for e in world.events() if e.created_at >= configured.endpoint.created_at]

    run(dispatcher.drain())

    hits = receiver.hits("/ok")
    assert [(h.payload["type"], h.problems) for h in hits if h.problems] == []
    assert {h.payload["type"] for h in hits} == {t.value for t in EVERY_TYPE}
    assert sorted(h.payload["id"] for h in hits) == sorted(e.id for e in due)
    records = deliveries(world)
    assert sorted(r.event_id for r in records) == sorted(e.id for e in due)
    assert {(r.status, r.http_status, r.response_body, r.error) for r in records} == {
        (DeliveryStatus.SUCCEEDED, 200, "ok", None)
    }


def test_data_of_each_event_names_the_resource_of_the_events_table(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    produce_every_event(world)
    run(dispatcher.drain())

    for hit in receiver.hits("/ok"):
        payload = hit.payload
        prefix, object_name = RESOURCE_OF_TYPE[payload["type"]]
        assert payload["data"]["id"].startswith(prefix), payload
        assert payload["data"]["object"] == object_name, payload
        assert payload["app_id"] == world.app.id
        assert payload["id"].startswith("whev_")


def test_referral_created_carries_the_snapshot_fields_of_the_interface(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    identified = world.referred_customer()
    run(dispatcher.drain())

    [hit] = [h for h in receiver.hits("/ok") if h.payload["type"] == "referral.created"]
    data = hit.payload["data"]
    assert data["id"] == identified.referral.id
    assert data["customer_id"] == identified.customer.id
    assert data["program_id"] == world.program.id
    assert data["program_affiliate_id"] == world.affiliate.id
    assert data["click_id"] == identified.referral.click_id
    assert data["created_at"].endswith("Z")


def test_livemode_is_true_for_affiliate_payout_and_live_activity_false_for_test_activity_and_webhook_test(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    produce_every_event(world)
    world.referred_customer(Mode.TEST)
    run(dispatcher.drain())

    seen = {(h.payload["type"], h.payload["livemode"]) for h in receiver.hits("/ok")}
    assert ("affiliate.created", True) in seen
    assert ("affiliate.approved", True) in seen
    assert ("affiliate.disabled", True) in seen
    assert ("transaction.created", True) in seen
    assert {("payout.ready", True), ("payout.succeeded", True), ("payout.failed", True)} <= seen
    assert ("webhook.test", False) in seen
    assert ("webhook.test", True) not in seen
    assert ("referral.created", False) in seen  # the Test-mode customer
    assert ("referral.created", True) in seen


def test_a_reinstatement_entry_is_sent_as_commission_created_with_its_kind(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    produce_every_event(world)
    run(dispatcher.drain())

    kinds = {
        (h.payload["type"], h.payload["data"]["kind"])
        for h in receiver.hits("/ok")
        if h.payload["type"].startswith("commission.")
    }
    assert {
        (EventType.COMMISSION_CREATED.value, "earned"),
        (EventType.COMMISSION_CREATED.value, "reinstatement"),
        (EventType.COMMISSION_REVERSED.value, "reversal"),
    } <= kinds
    assert (EventType.COMMISSION_CREATED.value, "reversal") not in kinds
    assert (EventType.COMMISSION_REVERSED.value, "earned") not in kinds


def test_the_receivers_check_refuses_a_delivery_signed_with_another_secret(
    world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    configure(world, box, receiver.url("/ok"))
    receiver.secret = "whsec_not-the-endpoint-secret"
    world.add_affiliate()

    run(dispatcher.drain())

    [hit] = receiver.hits("/ok")
    assert hit.problems == ["signature"]
