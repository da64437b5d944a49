"""Which processor events count, and as what (docs/processor.md): only succeeded, captured charges
and succeeded refunds are revenue (interface 4.1 rule 4); dispute statuses come from the dispute
object; everything else is acknowledged and ignored."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from tests.http.world import JSON, Client, Tenant, expect
from tests.processor import payloads
from tests.processor.world import (
    Installation,
    commission_entries,
    deliver,
    referred_customer,
)


@pytest.fixture
def metadata(client: Client, acme: Tenant) -> dict[str, str]:
    who: JSON = referred_customer(client, acme, acme.test_key, "m")
    return who["processor_metadata"]


def _paid(
    client: Client, installation: Installation, clock: ManualClock, metadata: dict[str, str], charge_id: str
) -> None:
    charge = payloads.charge(charge_id=charge_id, amount=8000, metadata=metadata, created=clock.now())
    expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 200)


def _disputes(client: Client, key: str) -> list[JSON]:
    return list(expect(client.get("/v1/transactions/disputes", key), 200)["data"])


def test_an_authorized_charge_is_not_a_payment_until_it_is_captured(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    authorized = payloads.charge(
        charge_id="ch_auth", amount=8000, metadata=metadata, created=clock.now(), captured=False
    )
    body = expect(deliver(client, installation, "charge.succeeded", authorized, at=clock.now()), 200)
    assert (body["handled"], body["records"]) == (True, [])
    assert expect(client.get("/v1/transactions", acme.test_key), 200)["data"] == []
    captured = payloads.charge(charge_id="ch_auth", amount=8000, metadata=metadata, created=clock.now())
    body = expect(deliver(client, installation, "charge.captured", captured, at=clock.now()), 200)
    (payment,) = body["records"]
    assert (payment["payment_id"], payment["amount"], payment["attributed"]) == ("ch_auth", 8000, True)


@pytest.mark.parametrize("captured", ["false", "true", 1, 0.5, None])
def test_a_charge_whose_captured_is_not_a_boolean_is_a_validation_error_and_records_nothing(
    client: Client,
    clock: ManualClock,
    acme: Tenant,
    installation: Installation,
    metadata: dict[str, str],
    captured: object,
) -> None:
    """Probe F: ``"captured": "false"`` was truthy, and a signed charge.succeeded recorded a payment."""
    charge = payloads.charge(charge_id="ch_typed", amount=8000, metadata=metadata, created=clock.now())
    charge["captured"] = captured
    response = deliver(client, installation, "charge.succeeded", charge, at=clock.now())
    assert expect(response, 400, "validation_error")["error"]["param"] == "data"
    assert expect(client.get("/v1/transactions", acme.test_key), 200)["data"] == []


def test_a_failed_charge_is_not_a_payment(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    failed = payloads.charge(
        charge_id="ch_failed", amount=8000, metadata=metadata, created=clock.now(), status="failed"
    )
    body = expect(deliver(client, installation, "charge.failed", failed, at=clock.now()), 200)
    assert (body["handled"], body["records"]) == (False, [])
    body = expect(deliver(client, installation, "charge.succeeded", failed, at=clock.now()), 200)
    assert body["records"] == []
    assert expect(client.get("/v1/transactions", acme.test_key), 200)["data"] == []


def test_a_refund_counts_once_it_succeeded_whichever_event_says_so(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    _paid(client, installation, clock, metadata, "ch_r")
    pending = payloads.refund(
        refund_id="re_r", charge_id="ch_r", amount=1000, created=clock.now(), status="pending"
    )
    assert (
        expect(deliver(client, installation, "refund.created", pending, at=clock.now()), 200)["records"] == []
    )
    done = payloads.refund(refund_id="re_r", charge_id="ch_r", amount=1000, created=clock.now())
    (refund,) = expect(deliver(client, installation, "refund.updated", done, at=clock.now()), 200)["records"]
    assert (refund["object"], refund["refund_id"], refund["payment_id"]) == ("refund", "re_r", "ch_r")
    (again,) = expect(deliver(client, installation, "charge.refund.updated", done, at=clock.now()), 200)[
        "records"
    ]
    assert again == refund
    in_charge = payloads.charge(
        charge_id="ch_r",
        amount=8000,
        metadata=metadata,
        created=clock.now(),
        amount_refunded=1000,
        refunds=[done],
    )
    (also,) = expect(deliver(client, installation, "charge.refunded", in_charge, at=clock.now()), 200)[
        "records"
    ]
    assert also == refund
    assert [e["kind"] for e in commission_entries(client, acme.test_key)] == ["earned", "reversal"]


def test_charge_refunded_records_each_succeeded_refund_it_lists(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    _paid(client, installation, clock, metadata, "ch_two")
    refunds = [
        payloads.refund(refund_id="re_a", charge_id="ch_two", amount=1000, created=clock.now()),
        payloads.refund(refund_id="re_b", charge_id="ch_two", amount=500, created=clock.now()),
        payloads.refund(
            refund_id="re_c", charge_id="ch_two", amount=700, created=clock.now(), status="failed"
        ),
    ]
    charge = payloads.charge(
        charge_id="ch_two",
        amount=8000,
        metadata=metadata,
        created=clock.now(),
        amount_refunded=1500,
        refunds=refunds,
    )
    records = expect(deliver(client, installation, "charge.refunded", charge, at=clock.now()), 200)["records"]
    assert [r["refund_id"] for r in records] == ["re_a", "re_b"]
    (payment,) = expect(client.get("/v1/transactions", acme.test_key), 200)["data"]
    assert payment["refunded_amount"] == 1500


def test_charge_refunded_listing_a_refund_of_another_charge_is_refused_whole(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    """A refund listed in one charge's refunds had been applied to that charge whatever charge it
    named (probe AG); the processor never sends such a list, so nothing of it is recorded."""
    _paid(client, installation, clock, metadata, "ch_outer")
    _paid(client, installation, clock, metadata, "ch_named")
    refunds = [
        payloads.refund(refund_id="re_ok", charge_id="ch_outer", amount=1000, created=clock.now()),
        payloads.refund(refund_id="re_elsewhere", charge_id="ch_named", amount=500, created=clock.now()),
    ]
    charge = payloads.charge(
        charge_id="ch_outer",
        amount=8000,
        metadata=metadata,
        created=clock.now(),
        amount_refunded=1500,
        refunds=refunds,
    )
    refused = expect(
        deliver(client, installation, "charge.refunded", charge, at=clock.now()), 400, "validation_error"
    )
    assert refused["error"]["param"] == "data"
    payments = expect(client.get("/v1/transactions", acme.test_key), 200)["data"]
    assert {p["payment_id"]: p["refunded_amount"] for p in payments} == {"ch_outer": 0, "ch_named": 0}


def test_charge_refunded_without_its_refunds_list_records_nothing_from_it(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    """Recent API versions leave ``refunds`` out of the charge; ``refund.*`` events carry them."""
    _paid(client, installation, clock, metadata, "ch_nolist")
    charge = payloads.charge(
        charge_id="ch_nolist", amount=8000, metadata=metadata, created=clock.now(), amount_refunded=800
    )
    body = expect(deliver(client, installation, "charge.refunded", charge, at=clock.now()), 200)
    assert (body["handled"], body["records"]) == (True, [])


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["warning_needs_response", "warning_under_review", "warning_closed"], "withdrawn"),
        (["needs_response", "under_review", "won"], "won"),
        (["needs_response", "lost"], "lost"),
    ],
)
def test_dispute_statuses_follow_the_dispute_object(
    client: Client,
    clock: ManualClock,
    acme: Tenant,
    installation: Installation,
    metadata: dict[str, str],
    statuses: list[str],
    expected: str,
) -> None:
    _paid(client, installation, clock, metadata, "ch_d")
    for index, status in enumerate(statuses):
        event_type = "charge.dispute.created" if index == 0 else "charge.dispute.updated"
        if index == len(statuses) - 1 and status in ("won", "lost", "warning_closed"):
            event_type = "charge.dispute.closed"
        dispute = payloads.dispute(
            dispute_id="dp_d", charge_id="ch_d", amount=2000, status=status, created=clock.now()
        )
        expect(deliver(client, installation, event_type, dispute, at=clock.now()), 200)
    (dispute_record,) = _disputes(client, acme.test_key)
    assert dispute_record["status"] == expected


def test_an_open_dispute_holds_the_commission_until_it_is_won(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    _paid(client, installation, clock, metadata, "ch_hold")
    opened = payloads.dispute(
        dispute_id="dp_hold", charge_id="ch_hold", amount=8000, status="needs_response", created=clock.now()
    )
    expect(deliver(client, installation, "charge.dispute.created", opened, at=clock.now()), 200)
    assert [e["status"] for e in commission_entries(client, acme.test_key)] == ["held"]
    won = payloads.dispute(
        dispute_id="dp_hold", charge_id="ch_hold", amount=8000, status="won", created=clock.now()
    )
    expect(deliver(client, installation, "charge.dispute.closed", won, at=clock.now()), 200)
    assert [e["status"] for e in commission_entries(client, acme.test_key)] == ["pending"]


def test_funds_reinstated_after_a_won_dispute_is_the_win_not_a_reinstatement(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    """The processor returns the funds it withdrew when a dispute is won; nothing was lost."""
    _paid(client, installation, clock, metadata, "ch_won")
    won = payloads.dispute(
        dispute_id="dp_won", charge_id="ch_won", amount=8000, status="won", created=clock.now()
    )
    expect(deliver(client, installation, "charge.dispute.funds_reinstated", won, at=clock.now()), 200)
    expect(deliver(client, installation, "charge.dispute.closed", won, at=clock.now()), 200)
    (dispute_record,) = _disputes(client, acme.test_key)
    assert dispute_record["status"] == "won"
    assert [e["kind"] for e in commission_entries(client, acme.test_key)] == ["earned"]


def test_a_dispute_event_with_an_unknown_status_changes_nothing(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, metadata: dict[str, str]
) -> None:
    _paid(client, installation, clock, metadata, "ch_odd")
    odd = payloads.dispute(
        dispute_id="dp_odd", charge_id="ch_odd", amount=100, status="some_future_status", created=clock.now()
    )
    body = expect(deliver(client, installation, "charge.dispute.updated", odd, at=clock.now()), 200)
    assert (body["handled"], body["records"]) == (True, [])
    assert _disputes(client, acme.test_key) == []


@pytest.mark.parametrize(
    "event_type", ["customer.created", "invoice.paid", "payment_intent.succeeded", "payout.paid"]
)
def test_other_event_types_are_acknowledged_and_ignored(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, event_type: str
) -> None:
    obj = {"id": "obj_1", "object": event_type.split(".")[0], "metadata": {}}
    body = expect(deliver(client, installation, event_type, obj, at=clock.now()), 200)
    assert (body["type"], body["handled"], body["records"]) == (event_type, False, [])
    assert expect(client.get("/v1/transactions", acme.test_key), 200)["data"] == []


def test_a_handled_event_whose_object_is_of_the_wrong_kind_is_a_validation_error(
    client: Client, clock: ManualClock, installation: Installation
) -> None:
    not_a_charge = payloads.refund(refund_id="re_x", charge_id="ch_x", amount=1, created=clock.now())
    response = deliver(client, installation, "charge.succeeded", not_a_charge, at=clock.now())
    assert expect(response, 400, "validation_error")["error"]["param"] == "data"


def test_metadata_naming_an_unknown_customer_is_refused_not_silently_unattributed(
    client: Client, clock: ManualClock, installation: Installation, acme: Tenant
) -> None:
    metadata = {
        "service_customer_id": "rcus_00000000000000000000000000",
        "service_program_id": acme.program_id,
    }
    charge = payloads.charge(charge_id="ch_unknown", amount=100, metadata=metadata, created=clock.now())
    expect(
        deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 404, "customer_not_found"
    )


def test_metadata_of_the_other_mode_is_mode_mismatch(
    client: Client, clock: ManualClock, installation: Installation, acme: Tenant
) -> None:
    """Interface 4.1 rule 7: a Test payment cannot use a Live customer's attribution."""
    live_customer = referred_customer(client, acme, acme.live_key, "live")
    charge = payloads.charge(
        charge_id="ch_mixed", amount=100, metadata=live_customer["processor_metadata"], created=clock.now()
    )
    expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 409, "mode_mismatch")


def test_a_charge_in_another_currency_than_the_program_is_currency_mismatch(
    client: Client, clock: ManualClock, installation: Installation, metadata: dict[str, str]
) -> None:
    charge = payloads.charge(
        charge_id="ch_eur", amount=100, currency="eur", metadata=metadata, created=clock.now()
    )
    expect(
        deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 400, "currency_mismatch"
    )


def test_a_charge_replayed_with_other_details_is_an_idempotency_conflict(
    client: Client, clock: ManualClock, installation: Installation, metadata: dict[str, str]
) -> None:
    _paid(client, installation, clock, metadata, "ch_same")
    changed = payloads.charge(charge_id="ch_same", amount=9000, metadata=metadata, created=clock.now())
    expect(
        deliver(client, installation, "charge.succeeded", changed, at=clock.now()),
        409,
        "idempotency_conflict",
    )
