"""A ``transaction_id`` filter names a payment: commissions, refunds and disputes are filed under
their payment's ``txn_``. A refund's ``txn_`` (which ``GET /v1/transactions/:id`` finds) had
answered ``404 transaction_not_found``; it is ``400 validation_error`` naming the payment to
filter by, after the usual ``404`` for another App and ``409`` for the other mode (probe H)."""

from __future__ import annotations

import pytest

from refcore.services.runtime import Runtime
from tests.http.world import Client, expect, new_activity, new_tenant

LISTS = ["/v1/commissions", "/v1/transactions/refunds", "/v1/transactions/disputes"]


@pytest.mark.parametrize("path", LISTS)
def test_a_refunds_transaction_id_as_a_filter_names_its_payment(
    client: Client, runtime: Runtime, path: str
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    activity = new_activity(client, tenant, tenant.live_key, "1")  # a payment, a refund, a dispute

    refused = client.get(path, tenant.live_key, transaction_id=activity.refund_txn)

    error = expect(refused, 400, "validation_error")["error"]
    assert error["param"] == "transaction_id" and activity.payment_txn in error["message"]
    by_payment = expect(client.get(path, tenant.live_key, transaction_id=activity.payment_txn), 200)["data"]
    assert by_payment and all(item["transaction_id"] == activity.payment_txn for item in by_payment)


@pytest.mark.parametrize("path", LISTS)
def test_another_apps_or_modes_refund_is_answered_as_any_other_id(
    client: Client, runtime: Runtime, path: str
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    rival = new_tenant(client, runtime, "rival")
    refund_txn = new_activity(client, tenant, tenant.live_key, "1").refund_txn

    expect(client.get(path, rival.live_key, transaction_id=refund_txn), 404, "transaction_not_found")
    expect(client.get(path, tenant.test_key, transaction_id=refund_txn), 409, "mode_mismatch")
