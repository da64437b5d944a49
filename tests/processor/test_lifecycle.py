"""Processor events become the same revenue as API reports: one referred customer's payment, a
partial refund, a dispute lost and then reinstated. Delivered in order, out of order and twice
(the processor retries what it was refused), the ledger is the one the API route produces."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from tests.http.world import JSON, Client, Tenant, expect, new_tenant
from tests.processor import payloads
from tests.processor.world import (
    Installation,
    commission_entries,
    connect,
    deliver,
    new_installation,
    referred_customer,
)

CHARGE = "ch_3PbLifecycleLkdIwHu7ix"
REFUND = "re_3PbLifecycleRefund01"
DISPUTE = "dp_1PbLifecycleDispute01"
AMOUNT = 10000
REFUNDED = 2500
DISPUTED = 3000


@dataclass(frozen=True)
class Step:
    """One thing that happened to the payment, as the processor tells it and as the API reports it."""

    name: str
    event_type: str
    obj: JSON
    api_path: str
    api_body: JSON


def lifecycle(metadata: dict[str, str], program_id: str, clock: ManualClock) -> list[Step]:
    at = clock.now()
    customer_id = metadata["service_customer_id"]
    refund = payloads.refund(refund_id=REFUND, charge_id=CHARGE, amount=REFUNDED, created=at)

    def dispute(status: str) -> JSON:
        return payloads.dispute(
            dispute_id=DISPUTE, charge_id=CHARGE, amount=DISPUTED, status=status, created=at
        )

    def dispute_report(status: str) -> JSON:
        return {"dispute_id": DISPUTE, "payment_id": CHARGE, "status": status, "amount": DISPUTED}

    return [
        Step(
            "paid",
            "charge.succeeded",
            payloads.charge(charge_id=CHARGE, amount=AMOUNT, metadata=metadata, created=at, livemode=True),
            "/v1/transactions",
            {
                "payment_id": CHARGE,
                "customer_id": customer_id,
                "program_id": program_id,
                "amount": AMOUNT,
                "currency": "usd",
            },
        ),
        Step(
            "partially refunded",
            "charge.refunded",
            payloads.charge(
                charge_id=CHARGE,
                amount=AMOUNT,
                metadata=metadata,
                created=at,
                livemode=True,
                amount_refunded=REFUNDED,
                refunds=[refund],
            ),
            "/v1/transactions/refunds",
            {"refund_id": REFUND, "payment_id": CHARGE, "amount": REFUNDED},
        ),
        Step(
            "disputed",
            "charge.dispute.created",
            dispute("needs_response"),
            "/v1/transactions/disputes",
            dispute_report("opened"),
        ),
        Step(
            "under review",
            "charge.dispute.updated",
            dispute("under_review"),
            "/v1/transactions/disputes",
            dispute_report("opened"),
        ),
        Step(
            "lost",
            "charge.dispute.closed",
            dispute("lost"),
            "/v1/transactions/disputes",
            dispute_report("lost"),
        ),
        Step(
            "reinstated",
            "charge.dispute.funds_reinstated",
            dispute("lost"),
            "/v1/transactions/disputes",
            dispute_report("funds_reinstated"),
        ),
    ]


@dataclass
class Pair:
    """Two Apps with the same program: one takes revenue from the processor, one from the API."""

    processor: Tenant
    api: Tenant
    installation: Installation
    processor_steps: list[Step]
    api_steps: list[Step]


@pytest.fixture
def pair(client: Client, runtime: Runtime, clock: ManualClock) -> Pair:
    processor = new_tenant(client, runtime, "viaprocessor")
    api = new_tenant(client, runtime, "viaapi")
    installation = new_installation(livemode=True)
    connect(client, processor, installation)
    by_processor = referred_customer(client, processor, processor.live_key, "p")
    by_api = referred_customer(client, api, api.live_key, "a")
    return Pair(
        processor=processor,
        api=api,
        installation=installation,
        processor_steps=lifecycle(by_processor["processor_metadata"], processor.program_id, clock),
        api_steps=lifecycle(by_api["processor_metadata"], api.program_id, clock),
    )


def _deliver(client: Client, pair: Pair, step: Step, clock: ManualClock) -> httpx.Response:
    return deliver(client, pair.installation, step.event_type, step.obj, at=clock.now())


def _report(client: Client, pair: Pair, step: Step) -> httpx.Response:
    return client.post(step.api_path, pair.api.live_key, step.api_body)


def _ledger(client: Client, key: str) -> list[tuple[Any, ...]]:
    """The commission entries as a comparable ledger: what they are, not their IDs."""
    return [(e["kind"], e["amount"], e["currency"], e["status"]) for e in commission_entries(client, key)]


def _payment_state(client: Client, key: str) -> tuple[Any, ...]:
    (payment,) = expect(client.get("/v1/transactions", key), 200)["data"]
    (dispute,) = expect(client.get("/v1/transactions/disputes", key), 200)["data"]
    (refund,) = expect(client.get("/v1/transactions/refunds", key), 200)["data"]
    return (
        payment["payment_id"],
        payment["amount"],
        payment["refunded_amount"],
        payment["disputed_amount"],
        payment["commission_amount"],
        payment["attributed"],
        refund["refund_id"],
        refund["amount"],
        dispute["dispute_id"],
        dispute["status"],
        dispute["amount"],
    )


def test_the_lifecycle_in_order_writes_the_ledger_of_the_formula(
    client: Client, clock: ManualClock, pair: Pair
) -> None:
    for step in pair.processor_steps:
        expect(_deliver(client, pair, step, clock), 200)
    # C = 20% of 10000 = 2000; refund 2500 -> 1500; lost 3000 -> 2000 - floor(2000*5500/10000) = 900;
    # reinstated -> back to 1500.
    assert [(kind, amount) for kind, amount, _, _ in _ledger(client, pair.processor.live_key)] == [
        ("earned", 2000),
        ("reversal", -500),
        ("reversal", -600),
        ("reinstatement", 600),
    ]
    (payment,) = expect(client.get("/v1/transactions", pair.processor.live_key), 200)["data"]
    assert payment["source"] == "processor" and payment["payment_id"] == CHARGE


def test_processor_events_and_api_reports_write_the_same_ledger(
    client: Client, clock: ManualClock, pair: Pair
) -> None:
    for processor_step, api_step in zip(pair.processor_steps, pair.api_steps, strict=True):
        processed = _deliver(client, pair, processor_step, clock)
        reported = _report(client, pair, api_step)
        assert processed.status_code == 200, processed.text
        assert reported.status_code in (200, 201), reported.text
        records = processed.json()["records"]
        assert [r["object"] for r in records] == [reported.json()["object"]]
    assert _ledger(client, pair.processor.live_key) == _ledger(client, pair.api.live_key)
    assert _payment_state(client, pair.processor.live_key) == _payment_state(client, pair.api.live_key)


@pytest.mark.parametrize("seed", range(8))
def test_out_of_order_and_repeated_deliveries_end_in_the_api_ledger(
    client: Client, clock: ManualClock, pair: Pair, seed: int
) -> None:
    """Every event is delivered twice, in a shuffled order; a refused delivery (a refund or dispute
    before its payment, a reinstatement before the loss) is retried later, as the processor does.
    The API App then receives the reports in the order the processor App accepted them."""
    shuffle = random.Random(seed)
    deliveries = [*range(len(pair.processor_steps))] * 2
    shuffle.shuffle(deliveries)
    queue = deque(deliveries)
    accepted: list[int] = []
    refused = 0
    while queue:
        index = queue.popleft()
        response = _deliver(client, pair, pair.processor_steps[index], clock)
        if response.status_code == 200:
            accepted.append(index)
            continue
        body = response.json()
        assert (response.status_code, body["error"]["code"]) in {
            (404, "payment_not_found"),
            (409, "dispute_conflict"),
        }, body
        refused += 1
        assert refused < 100
        queue.append(index)
    assert refused > 0  # every seed here delivers something before what it depends on
    for index in accepted:
        reported = _report(client, pair, pair.api_steps[index])
        assert reported.status_code in (200, 201), reported.text
    assert _ledger(client, pair.processor.live_key) == _ledger(client, pair.api.live_key)
    assert _payment_state(client, pair.processor.live_key) == _payment_state(client, pair.api.live_key)
    # Whatever the order, the payment's entries meet the formula target: 2000 - floor(2000*2500/10000).
    assert sum(amount for _, amount, _, _ in _ledger(client, pair.processor.live_key)) == 1500


def test_a_refund_before_its_payment_is_refused_so_the_processor_retries_it(
    client: Client, clock: ManualClock, pair: Pair
) -> None:
    paid, refunded = pair.processor_steps[0], pair.processor_steps[1]
    expect(_deliver(client, pair, refunded, clock), 404, "payment_not_found")
    expect(_deliver(client, pair, paid, clock), 200)
    expect(_deliver(client, pair, refunded, clock), 200)
    expect(_deliver(client, pair, refunded, clock), 200)  # and again: a replay
    (payment,) = expect(client.get("/v1/transactions", pair.processor.live_key), 200)["data"]
    assert payment["refunded_amount"] == REFUNDED


def test_a_repeated_delivery_changes_nothing(client: Client, clock: ManualClock, pair: Pair) -> None:
    for step in pair.processor_steps:
        first = expect(_deliver(client, pair, step, clock), 200)
        again = expect(_deliver(client, pair, step, clock), 200)
        assert again["records"] == first["records"]
    assert len(commission_entries(client, pair.processor.live_key)) == 4


def test_the_lifecycle_holds_on_every_store(
    store_client: Client, store_runtime: Runtime, clock: ManualClock
) -> None:
    tenant = new_tenant(store_client, store_runtime, "everystore")
    installation = new_installation()
    connect(store_client, tenant, installation)
    who = referred_customer(store_client, tenant, tenant.test_key, "s")
    steps = lifecycle(who["processor_metadata"], tenant.program_id, clock)
    for step in [steps[1], *steps, steps[0], steps[4]]:
        obj = {**step.obj, "livemode": False}
        response = deliver(store_client, installation, step.event_type, obj, at=clock.now())
        assert response.status_code in (200, 404), response.text
    amounts = [e["amount"] for e in commission_entries(store_client, tenant.test_key)]
    assert amounts == [2000, -500, -600, 600]
