"""The test payloads are the processor's own shapes: the official ``stripe`` package parses each
into its typed class, and signs them exactly as the test signer does."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import stripe

from tests.processor import payloads

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _parsed(obj: payloads.JSON, event_type: str) -> stripe.Event:
    body = payloads.encode(payloads.event(event_type, obj, account="acct_1X", livemode=False, created=AT))
    return stripe.Event.construct_from(json.loads(body), None)


def test_the_charge_payload_parses_into_a_stripe_charge_with_its_refunds() -> None:
    refund = payloads.refund(refund_id="re_1", charge_id="ch_1", amount=5, created=AT)
    charge = payloads.charge(charge_id="ch_1", amount=10, created=AT, refunds=[refund], amount_refunded=5)
    event = _parsed(charge, "charge.refunded")
    assert isinstance(event.data.object, stripe.Charge)
    assert event.account == "acct_1X" and event.type == "charge.refunded"
    (parsed_refund,) = event.data.object.refunds.data
    assert isinstance(parsed_refund, stripe.Refund) and parsed_refund.charge == "ch_1"


def test_the_refund_and_dispute_payloads_parse_into_their_stripe_classes() -> None:
    refund = payloads.refund(refund_id="re_2", charge_id="ch_2", amount=5, created=AT)
    dispute = payloads.dispute(dispute_id="dp_2", charge_id="ch_2", amount=5, status="lost", created=AT)
    assert isinstance(_parsed(refund, "refund.created").data.object, stripe.Refund)
    parsed = _parsed(dispute, "charge.dispute.closed").data.object
    assert isinstance(parsed, stripe.Dispute) and parsed.status == "lost"


def test_the_test_signer_agrees_with_the_official_package() -> None:
    body = payloads.encode(
        payloads.event(
            "charge.succeeded",
            payloads.charge(charge_id="ch_3", amount=10, created=AT),
            account="acct_1X",
            livemode=False,
            created=AT,
        )
    )
    ours = payloads.sign(body, "whsec_agree", AT)
    official = stripe.WebhookSignature.generate_signature_header(
        body.decode("utf-8"), "whsec_agree", timestamp=int(AT.timestamp())
    )
    assert ours == official
    assert stripe.WebhookSignature.verify_header(body, ours, "whsec_agree", tolerance=None)
