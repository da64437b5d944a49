"""An inquiry (``warning_needs_response``, ``warning_under_review``) holds the commission but
consumes none of the payment, so a refund the merchant makes during it is recorded.

Probe I found the refund refused with ``amount_exceeds_payment`` ("at most 0 remains") for as
long as the inquiry stayed open: the processor stops retrying after days, an inquiry can stay
open for months, and the reversal the refund owed the ledger was never written.
"""

from __future__ import annotations

import httpx

from refcore.clocks import ManualClock
from tests.http.world import JSON, Client, Tenant, expect
from tests.processor import payloads
from tests.processor.world import Installation, commission_entries, deliver, referred_customer

CHARGE = "ch_3PbInquiryCharge000001"
INQUIRY = "du_1PbInquiryDispute0001"
AMOUNT = 10_000
COMMISSION = 2_000  # the test program pays 20 %


def _paid(client: Client, clock: ManualClock, acme: Tenant, installation: Installation) -> None:
    who = referred_customer(client, acme, acme.test_key, CHARGE)
    charge = payloads.charge(
        charge_id=CHARGE, amount=AMOUNT, metadata=who["processor_metadata"], created=clock.now()
    )
    expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 200)


def _dispute(
    client: Client, clock: ManualClock, installation: Installation, event_type: str, status: str
) -> JSON:
    dispute = payloads.dispute(
        dispute_id=INQUIRY, charge_id=CHARGE, amount=AMOUNT, status=status, created=clock.now()
    )
    return expect(deliver(client, installation, event_type, dispute, at=clock.now()), 200)


def _refund(
    client: Client, clock: ManualClock, installation: Installation, refund_id: str, amount: int
) -> httpx.Response:
    refund = payloads.refund(refund_id=refund_id, charge_id=CHARGE, amount=amount, created=clock.now())
    return deliver(client, installation, "refund.created", refund, at=clock.now())


def _payment(client: Client, acme: Tenant) -> JSON:
    (payment,) = expect(client.get("/v1/transactions", acme.test_key), 200)["data"]
    return payment


def _entries_total(client: Client, acme: Tenant) -> int:
    return sum(entry["amount"] for entry in commission_entries(client, acme.test_key))


def test_a_partial_refund_during_an_inquiry_is_recorded_and_reverses_its_share(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    _paid(client, clock, acme, installation)
    _dispute(client, clock, installation, "charge.dispute.created", "warning_needs_response")

    expect(_refund(client, clock, installation, "re_during_inquiry", 3_000), 200)

    payment = _payment(client, acme)
    assert (payment["refunded_amount"], payment["disputed_amount"]) == (3_000, 0)
    assert _entries_total(client, acme) == COMMISSION - 600
    (dispute,) = expect(client.get("/v1/transactions/disputes", acme.test_key), 200)["data"]
    assert (dispute["status"], dispute["inquiry"]) == ("opened", True)
    statuses = {entry["kind"]: entry["status"] for entry in commission_entries(client, acme.test_key)}
    assert statuses == {"earned": "held", "reversal": "pending"}  # a reversal is never held


def test_an_inquiry_closed_after_a_full_refund_leaves_nothing_owed_or_held(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    _paid(client, clock, acme, installation)
    _dispute(client, clock, installation, "charge.dispute.created", "warning_needs_response")
    expect(_refund(client, clock, installation, "re_whole", AMOUNT), 200)

    _dispute(client, clock, installation, "charge.dispute.closed", "charge_refunded")

    payment = _payment(client, acme)
    assert (payment["refunded_amount"], payment["disputed_amount"]) == (AMOUNT, 0)
    assert _entries_total(client, acme) == 0


def test_an_inquiry_escalated_to_a_chargeback_counts_against_the_payment(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    _paid(client, clock, acme, installation)
    _dispute(client, clock, installation, "charge.dispute.created", "warning_under_review")

    _dispute(client, clock, installation, "charge.dispute.updated", "needs_response")

    assert _payment(client, acme)["disputed_amount"] == AMOUNT
    expect(_refund(client, clock, installation, "re_after_escalation", 1), 400, "amount_exceeds_payment")
    (dispute,) = expect(client.get("/v1/transactions/disputes", acme.test_key), 200)["data"]
    assert (dispute["status"], dispute["inquiry"]) == ("opened", False)
