"""Currency must be an ISO 4217 code (interface 2.2), through the API: ``400 validation_error``
with ``param`` ``currency``, and nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from refcore.services.runtime import Runtime
from tests.http.world import Client, Tenant, expect, identified_customer, new_tenant, stored_records


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


def _program(tenant: Tenant, currency: object) -> dict[str, Any]:
    return {
        "app_id": tenant.app_id,
        "name": "Second",
        "slug": "second",
        "currency": currency,
        "commission": {"type": "percent", "bps": 2000},
    }


@pytest.mark.parametrize("currency", ["usd", "jpy", "eur"])
def test_currency_must_be_an_iso_4217_code_listed_codes_create_a_program(
    client: Client, tenant: Tenant, currency: str
) -> None:
    created = expect(client.post("/v1/programs", tenant.session, _program(tenant, currency)), 201)
    assert created["currency"] == currency


@pytest.mark.parametrize("currency", ["zzz", "xyz", "hrk", "USD", "usd\n", ["usd"]])
def test_currency_must_be_an_iso_4217_code_to_create_a_program(
    client: Client, runtime: Runtime, tenant: Tenant, currency: object
) -> None:
    before = stored_records(runtime)
    response = client.post("/v1/programs", tenant.session, _program(tenant, currency))
    error = expect(response, 400, "validation_error")["error"]
    assert error["param"] == "currency"
    if isinstance(currency, str):  # the body's types are checked before the rule
        assert "ISO 4217" in error["message"]
    assert stored_records(runtime) == before


def test_currency_must_be_an_iso_4217_code_and_cannot_be_changed_by_an_update(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    before = stored_records(runtime)
    for currency in ("zzz", "eur"):
        response = client.patch(f"/v1/programs/{tenant.program_id}", tenant.session, {"currency": currency})
        assert expect(response, 400, "validation_error")["error"]["param"] == "currency"
    assert stored_records(runtime) == before
    assert expect(client.get(f"/v1/programs/{tenant.program_id}", tenant.session), 200)["currency"] == "usd"


def test_currency_must_be_an_iso_4217_code_a_payment_in_xyz_is_validation_error_not_currency_mismatch(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    payment = {
        "payment_id": "pay_1",
        "customer_id": identified_customer(client, tenant),
        "program_id": tenant.program_id,
        "amount": 2900,
    }
    before = stored_records(runtime)
    response = client.post("/v1/transactions", tenant.live_key, {**payment, "currency": "xyz"})
    error = expect(response, 400, "validation_error")["error"]
    assert (error["param"], "ISO 4217" in error["message"]) == ("currency", True)
    response = client.post("/v1/transactions", tenant.live_key, {**payment, "currency": "eur"})
    assert expect(response, 400, "currency_mismatch")["error"]["param"] == "currency"
    assert stored_records(runtime) == before
    expect(client.post("/v1/transactions", tenant.live_key, {**payment, "currency": "usd"}), 201)
