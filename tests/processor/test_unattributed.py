"""A processor payment without identify's metadata stays in history unattributed, with no
customer, program or commission, and raises the setup alarm of its mode (decisions 4)."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.models import Mode
from refcore.services.principal import Principal, PrincipalKind
from refcore.services.runtime import Runtime
from refcore.services.setup_status import setup_status
from tests.http.world import Client, Tenant, expect
from tests.processor import payloads
from tests.processor.world import (
    Installation,
    commission_entries,
    deliver,
    referred_customer,
)


def _unattributed_alarm(runtime: Runtime, tenant: Tenant) -> int | None:
    principal = Principal(kind=PrincipalKind.APP_KEY, app_id=tenant.app_id, mode=Mode.TEST)
    status = setup_status(runtime, principal, tenant.app_id)
    assert status.test is not None
    counts = [alarm.count for alarm in status.test.alarms if alarm.code == "unattributed_payments"]
    return counts[0] if counts else None


def test_a_payment_without_metadata_stays_in_history_unattributed(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    bare = payloads.charge(charge_id="ch_bare", amount=4200, created=clock.now())
    (payment,) = expect(deliver(client, installation, "charge.succeeded", bare, at=clock.now()), 200)[
        "records"
    ]
    assert payment["payment_id"] == "ch_bare" and payment["amount"] == 4200
    assert (payment["attributed"], payment["customer_id"], payment["program_id"]) == (False, None, None)
    assert (payment["commission_amount"], payment["source"]) == (0, "processor")
    (listed,) = expect(client.get("/v1/transactions", acme.test_key), 200)["data"]
    assert listed == payment
    assert expect(client.get(f"/v1/transactions/{payment['id']}", acme.session), 200) == payment
    assert commission_entries(client, acme.test_key) == []


def test_unattributed_payments_raise_the_setup_alarm_with_their_count(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    assert _unattributed_alarm(runtime, acme) is None
    who = referred_customer(client, acme, acme.test_key, "tagged")
    tagged = payloads.charge(
        charge_id="ch_tagged", amount=100, metadata=who["processor_metadata"], created=clock.now()
    )
    expect(deliver(client, installation, "charge.succeeded", tagged, at=clock.now()), 200)
    assert _unattributed_alarm(runtime, acme) is None
    for charge_id in ("ch_bare1", "ch_bare2"):
        bare = payloads.charge(charge_id=charge_id, amount=100, created=clock.now())
        expect(deliver(client, installation, "charge.succeeded", bare, at=clock.now()), 200)
    expect(deliver(client, installation, "charge.succeeded", bare, at=clock.now()), 200)  # a replay
    assert _unattributed_alarm(runtime, acme) == 2


@pytest.mark.parametrize(
    "metadata",
    [
        {"order": "A-17"},
        {"service_click_id": "clk_0000"},
        {"service_customer_id": "rcus_0000"},
        {"service_program_id": "prg_0000"},
        {"service_customer_id": " ", "service_program_id": "prg_0000"},
    ],
)
def test_a_payment_without_both_customer_and_program_keys_is_unattributed(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    charge = payloads.charge(charge_id="ch_partial", amount=700, metadata=metadata, created=clock.now())
    (payment,) = expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 200)[
        "records"
    ]
    assert (payment["attributed"], payment["customer_id"]) == (False, None)


def test_an_unattributed_payment_takes_refunds_and_disputes_without_commission(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    bare = payloads.charge(charge_id="ch_bare", amount=4200, created=clock.now())
    expect(deliver(client, installation, "charge.succeeded", bare, at=clock.now()), 200)
    refund = payloads.refund(refund_id="re_bare", charge_id="ch_bare", amount=200, created=clock.now())
    expect(deliver(client, installation, "refund.created", refund, at=clock.now()), 200)
    lost = payloads.dispute(
        dispute_id="dp_bare", charge_id="ch_bare", amount=4000, status="lost", created=clock.now()
    )
    expect(deliver(client, installation, "charge.dispute.closed", lost, at=clock.now()), 200)
    too_much = payloads.refund(refund_id="re_more", charge_id="ch_bare", amount=1, created=clock.now())
    expect(
        deliver(client, installation, "refund.created", too_much, at=clock.now()),
        400,
        "amount_exceeds_payment",
    )
    (payment,) = expect(client.get("/v1/transactions", acme.test_key), 200)["data"]
    assert (payment["refunded_amount"], payment["disputed_amount"]) == (200, 4000)
    assert commission_entries(client, acme.test_key) == []


def test_the_same_charge_cannot_later_claim_an_attribution(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """A payment's identity is immutable (interface 4.1 rule 5): metadata added to the charge after
    it was recorded unattributed is a conflict, not a silent re-attribution."""
    bare = payloads.charge(charge_id="ch_later", amount=900, created=clock.now())
    expect(deliver(client, installation, "charge.succeeded", bare, at=clock.now()), 200)
    who = referred_customer(client, acme, acme.test_key, "late")
    tagged = payloads.charge(
        charge_id="ch_later", amount=900, metadata=who["processor_metadata"], created=clock.now()
    )
    expect(
        deliver(client, installation, "charge.captured", tagged, at=clock.now()), 409, "idempotency_conflict"
    )
