"""A ``transaction_id`` filter names a payment: commissions, refunds and disputes are filed under
their payment's ``txn_``. A refund's ``txn_`` (which ``GET /v1/transactions/:id`` finds) had
answered ``404 transaction_not_found``; it is ``400 validation_error`` naming the payment to
filter by, after the usual ``404`` for another App and ``409`` for the other mode (probe H)."""

from __future__ import annotations

import pytest

from refcore.services.runtime import Runtime
from tests.http.world import JSON, Client, Tenant, expect, identified_customer, new_tenant

LISTS = ["/v1/commissions", "/v1/transactions/refunds", "/v1/transactions/disputes"]


def _payment_and_refund(client: Client, tenant: Tenant) -> tuple[JSON, JSON]:
    body = {
        "payment_id": "pay_1",
        "customer_id": identified_customer(client, tenant),
        "program_id": tenant.program_id,
        "amount": 2900,
        "currency": "usd",
    }
    payment = expect(client.post("/v1/transactions", tenant.live_key, body), 201)
    refund_body = {"refund_id": "re_1", "payment_id": "pay_1", "amount": 900}
    refund = expect(client.post("/v1/transactions/refunds", tenant.live_key, refund_body), 201)
    return payment, refund


@pytest.mark.parametrize("path", LISTS)
def test_a_refunds_transaction_id_as_a_filter_names_its_payment(
    client: Client, runtime: Runtime, path: str
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    payment, refund = _payment_and_refund(client, tenant)

    refused = client.get(path, tenant.live_key, transaction_id=refund["id"])

    error = expect(refused, 400, "validation_error")["error"]
    assert error["param"] == "transaction_id" and payment["id"] in error["message"]
    by_payment = expect(client.get(path, tenant.live_key, transaction_id=payment["id"]), 200)["data"]
    assert all(item["transaction_id"] == payment["id"] for item in by_payment)
    assert by_payment or path.endswith("disputes")  # the payment has entries and a refund


@pytest.mark.parametrize("path", LISTS)
def test_another_apps_or_modes_refund_is_answered_as_any_other_id(
    client: Client, runtime: Runtime, path: str
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    rival = new_tenant(client, runtime, "rival")
    _payment, refund = _payment_and_refund(client, tenant)

    expect(client.get(path, rival.live_key, transaction_id=refund["id"]), 404, "transaction_not_found")
    expect(client.get(path, tenant.test_key, transaction_id=refund["id"]), 409, "mode_mismatch")
