"""The revenue-source rule both ways (interface 4.1 rule 9, decisions 4): API revenue is refused
while the processor is connected in that mode or once Live revenue is locked to it; processor
revenue is refused once Live revenue is locked to the API. Only a positive Live payment locks."""

from __future__ import annotations

from attrs import evolve

from refcore.clocks import ManualClock
from refcore.models import RevenueSource
from refcore.services.runtime import Runtime, Tx
from tests.http.world import JSON, Client, Tenant, expect, new_tenant
from tests.processor import payloads
from tests.processor.world import (
    Installation,
    connect,
    connect_link,
    deliver,
    new_installation,
    referred_customer,
    stored_app,
)


def _api_payment(client: Client, tenant: Tenant, key: str, payment_id: str, amount: int = 1000) -> JSON:
    who = referred_customer(client, tenant, key, payment_id)
    return {
        "payment_id": payment_id,
        "customer_id": who["customer_id"],
        "program_id": tenant.program_id,
        "amount": amount,
        "currency": "usd",
    }


def _processor_charge(
    client: Client,
    tenant: Tenant,
    installation: Installation,
    clock: ManualClock,
    charge_id: str,
    amount: int,
) -> JSON:
    key = tenant.live_key if installation.livemode else tenant.test_key
    who = referred_customer(client, tenant, key, charge_id)
    return payloads.charge(
        charge_id=charge_id,
        amount=amount,
        metadata=who["processor_metadata"],
        created=clock.now(),
        livemode=installation.livemode,
    )


def test_api_revenue_is_refused_in_the_connected_mode_only(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    connect(client, tenant, new_installation(livemode=False))
    refused = client.post(
        "/v1/transactions", tenant.test_key, _api_payment(client, tenant, tenant.test_key, "t1")
    )
    expect(refused, 409, "revenue_source_conflict")
    expect(
        client.post("/v1/transactions", tenant.live_key, _api_payment(client, tenant, tenant.live_key, "l1")),
        201,
    )


def test_api_refunds_and_disputes_are_refused_once_the_processor_is_connected(
    client: Client, runtime: Runtime
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    expect(
        client.post("/v1/transactions", tenant.test_key, _api_payment(client, tenant, tenant.test_key, "p1")),
        201,
    )
    connect(client, tenant, new_installation(livemode=False))
    refund = {"refund_id": "re_1", "payment_id": "p1", "amount": 100}
    expect(client.post("/v1/transactions/refunds", tenant.test_key, refund), 409, "revenue_source_conflict")
    dispute = {"dispute_id": "dp_1", "payment_id": "p1", "status": "opened", "amount": 100}
    expect(client.post("/v1/transactions/disputes", tenant.test_key, dispute), 409, "revenue_source_conflict")


def test_the_first_positive_live_processor_payment_locks_the_source_to_the_processor(
    client: Client, runtime: Runtime, clock: ManualClock
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    live = new_installation(livemode=True)
    connect(client, tenant, live)
    charge = _processor_charge(client, tenant, live, clock, "ch_lock", 4900)
    expect(deliver(client, live, "charge.succeeded", charge, at=clock.now()), 200)
    assert stored_app(runtime, tenant.app_id).live_revenue_source is RevenueSource.PROCESSOR
    assert (
        expect(client.get(f"/v1/apps/{tenant.app_id}", tenant.session), 200)["live_revenue_source"]
        == "processor"
    )
    # Disconnecting does not unlock: Live API revenue stays refused.
    expect(client.post("/v1/processor/disconnect", tenant.live_key, {}), 200)
    refused = client.post(
        "/v1/transactions", tenant.live_key, _api_payment(client, tenant, tenant.live_key, "after")
    )
    expect(refused, 409, "revenue_source_conflict")


def test_test_mode_and_zero_value_live_processor_payments_do_not_lock(
    client: Client, runtime: Runtime, clock: ManualClock
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    test = new_installation(livemode=False)
    live = new_installation(livemode=True)
    connect(client, tenant, test)
    connect(client, tenant, live)
    test_charge = _processor_charge(client, tenant, test, clock, "ch_test", 5000)
    expect(deliver(client, test, "charge.succeeded", test_charge, at=clock.now()), 200)
    free = _processor_charge(client, tenant, live, clock, "ch_free", 0)
    expect(deliver(client, live, "charge.succeeded", free, at=clock.now()), 200)
    assert stored_app(runtime, tenant.app_id).live_revenue_source is None
    # Still unlocked: once the processor is disconnected, the App may report Live revenue itself.
    expect(client.post("/v1/processor/disconnect", tenant.live_key, {}), 200)
    expect(
        client.post(
            "/v1/transactions", tenant.live_key, _api_payment(client, tenant, tenant.live_key, "api")
        ),
        201,
    )
    assert stored_app(runtime, tenant.app_id).live_revenue_source is RevenueSource.API


def test_an_app_locked_to_api_revenue_cannot_connect_the_live_processor(
    client: Client, runtime: Runtime
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    expect(
        client.post(
            "/v1/transactions", tenant.live_key, _api_payment(client, tenant, tenant.live_key, "first")
        ),
        201,
    )
    assert stored_app(runtime, tenant.app_id).live_revenue_source is RevenueSource.API
    response = client.post("/v1/processor/connect-link", tenant.live_key, {})
    expect(response, 409, "revenue_source_conflict")
    connect(client, tenant, new_installation(livemode=False))  # Test mode never locks


def test_a_link_made_before_the_api_lock_cannot_be_claimed_after_it(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    state = connect_link(client, tenant.live_key)["state"]
    expect(
        client.post(
            "/v1/transactions", tenant.live_key, _api_payment(client, tenant, tenant.live_key, "first")
        ),
        201,
    )
    response = client.post(
        "/v1/processor/claim-pending-install",
        tenant.live_key,
        {"state": state, "account_id": "acct_1LateClaim", "webhook_secret": "whsec_late"},
    )
    expect(response, 409, "revenue_source_conflict")
    assert not stored_app(runtime, tenant.app_id).processor_connected_live


def test_processor_revenue_to_an_app_locked_to_api_is_refused(
    client: Client, runtime: Runtime, clock: ManualClock
) -> None:
    """Connecting is refused once the API owns the lock, but a connection claimed in a race with the
    first API payment can exist; its events are then refused with 409 and nothing is recorded."""
    tenant = new_tenant(client, runtime, "acme")
    live = new_installation(livemode=True)
    connect(client, tenant, live)

    def lock_to_api(tx: Tx) -> None:
        app = tx.uow.apps.get(tenant.app_id, for_update=True)
        assert app is not None
        tx.uow.apps.replace(evolve(app, live_revenue_source=RevenueSource.API))

    runtime.transaction(lock_to_api)
    charge = _processor_charge(client, tenant, live, clock, "ch_late", 3000)
    expect(deliver(client, live, "charge.succeeded", charge, at=clock.now()), 409, "revenue_source_conflict")
    no_metadata = payloads.charge(charge_id="ch_bare", amount=3000, created=clock.now(), livemode=True)
    expect(
        deliver(client, live, "charge.succeeded", no_metadata, at=clock.now()), 409, "revenue_source_conflict"
    )
    assert expect(client.get("/v1/transactions", tenant.live_key), 200)["data"] == []
