"""Concurrent claims and concurrent deliveries, on every store: one active connection per App and
mode, and one record per processor object, whatever the interleaving. Threads are released
together by a barrier; only outcomes are asserted."""

from __future__ import annotations

from collections import Counter

from refcore.clocks import ManualClock
from refcore.errors import RefcoreError
from refcore.models import Mode
from refcore.services.principal import Scope
from refcore.services.processor_connection import (
    ProcessorKeys,
    claim_pending_install,
    create_connect_link,
)
from refcore.services.processor_events import ProcessorPayment, ProcessorRefund, apply_change
from refcore.services.runtime import Runtime
from refcore.services.tenancy import authenticate
from tests.contract.test_concurrency import at_once
from tests.http.world import Client, expect, new_tenant
from tests.processor.world import SECRET_KEY, referred_customer, stored_app, stored_connections

KEYS = ProcessorKeys(SECRET_KEY)


def _outcomes(results: list[object]) -> Counter[str]:
    return Counter(
        r.code if isinstance(r, RefcoreError) else ("created" if r.created else "replay")  # type: ignore[attr-defined]
        for r in results
    )


def test_concurrent_claims_for_one_app_and_mode_leave_one_connection(
    store_client: Client, store_runtime: Runtime
) -> None:
    tenant = new_tenant(store_client, store_runtime, "acme")
    owner = authenticate(store_runtime, tenant.session)
    states = [
        create_connect_link(
            store_runtime, owner, KEYS, "https://p.example/i", app_id=tenant.app_id, mode="test"
        ).state
        for _ in range(4)
    ]
    results = at_once(
        [
            lambda s=state, n=n: claim_pending_install(
                store_runtime,
                owner,
                KEYS,
                state=s,
                account_id=f"acct_race{n}",
                webhook_secret=f"whsec_race{n}",
            )
            for n, state in enumerate(states)
        ]
    )
    assert _outcomes(results) == Counter({"created": 1, "state_conflict": 3})
    assert len(stored_connections(store_runtime, tenant.app_id)) == 1
    assert stored_app(store_runtime, tenant.app_id).processor_connected_test


def test_concurrent_claims_of_one_account_by_several_apps_each_connect_their_own_app(
    store_client: Client, store_runtime: Runtime
) -> None:
    """An account is not unique to one App (refcore.models.processor): each claim connects its
    own App, once, however they interleave."""
    tenants = [new_tenant(store_client, store_runtime, f"app{n}") for n in range(3)]
    claims = []
    for n, tenant in enumerate(tenants):
        owner = authenticate(store_runtime, tenant.session)
        state = create_connect_link(
            store_runtime, owner, KEYS, "https://p.example/i", app_id=tenant.app_id, mode="live"
        ).state
        claims.append(
            lambda o=owner, s=state, n=n: claim_pending_install(
                store_runtime, o, KEYS, state=s, account_id="acct_shared", webhook_secret=f"whsec_{n}"
            )
        )
    results = at_once(claims)
    assert _outcomes(results) == Counter({"created": 3})
    for tenant in tenants:
        assert stored_app(store_runtime, tenant.app_id).processor_connected_live
        assert [c.account_id for c in stored_connections(store_runtime, tenant.app_id)] == ["acct_shared"]


def test_concurrent_deliveries_of_one_charge_and_refund_record_each_once(
    store_client: Client, store_runtime: Runtime, clock: ManualClock
) -> None:
    tenant = new_tenant(store_client, store_runtime, "acme")
    who = referred_customer(store_client, tenant, tenant.test_key, "race")
    scope = Scope(app_id=tenant.app_id, mode=Mode.TEST)
    payment = ProcessorPayment(
        payment_id="ch_race", amount=5000, currency="usd", metadata=who["processor_metadata"]
    )
    paid = at_once([lambda: apply_change(store_runtime, scope, payment) for _ in range(4)])
    assert _outcomes(paid) == Counter({"created": 1, "replay": 3})
    refund = ProcessorRefund(refund_id="re_race", payment_id="ch_race", amount=3000, currency="usd")
    refunded = at_once([lambda: apply_change(store_runtime, scope, refund) for _ in range(4)])
    assert _outcomes(refunded) == Counter({"created": 1, "replay": 3})
    (stored,) = expect(store_client.get("/v1/transactions", tenant.test_key), 200)["data"]
    assert stored["refunded_amount"] == 3000
