"""Bad input answers its documented 4xx code, and changes nothing.

Each case is sent to ``POST /v1/transactions`` (or another writing endpoint) with a valid
credential; the test then checks that no record and no event was written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from refcore.services.runtime import Runtime
from tests.http.world import Client, Tenant, expect, identified_customer, new_tenant, stored_records


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


@pytest.fixture
def customer_id(client: Client, tenant: Tenant) -> str:
    return identified_customer(client, tenant)


def _payment(tenant: Tenant, customer_id: str, **changes: Any) -> dict[str, Any]:
    body = {
        "payment_id": "pay_1",
        "customer_id": customer_id,
        "program_id": tenant.program_id,
        "amount": 2900,
        "currency": "usd",
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not ...}


_JSON = {"Content-Type": "application/json"}

# (case name, raw body or None for the JSON of the payment, headers, status, code, param)
_RAW_CASES = [
    ("empty body", b"", _JSON, 400, "invalid_json", None),
    ("whitespace body", b"  \n", _JSON, 400, "invalid_json", None),
    ("malformed JSON", b'{"payment_id": ', _JSON, 400, "invalid_json", None),
    ("JSON array", b"[1, 2]", _JSON, 400, "invalid_json", None),
    ("JSON string", b'"pay"', _JSON, 400, "invalid_json", None),
    ("NaN", b'{"amount": NaN}', _JSON, 400, "invalid_json", None),
    ("invalid UTF-8", b'{"payment_id": "\xff\xfe"}', _JSON, 400, "invalid_json", None),
    ("non-JSON content type", None, {"Content-Type": "text/plain"}, 400, "invalid_json", None),
    (
        "form content type",
        None,
        {"Content-Type": "application/x-www-form-urlencoded"},
        400,
        "invalid_json",
        None,
    ),
    ("no content type", None, {}, 400, "invalid_json", None),
]


@pytest.mark.parametrize(
    ("raw", "headers", "status", "code", "param"),
    [case[1:] for case in _RAW_CASES],
    ids=[case[0] for case in _RAW_CASES],
)
def test_unreadable_bodies_are_invalid_json(
    client: Client,
    runtime: Runtime,
    tenant: Tenant,
    customer_id: str,
    raw: bytes | None,
    headers: dict[str, str],
    status: int,
    code: str,
    param: str | None,
) -> None:
    before = stored_records(runtime)
    content = raw if raw is not None else json.dumps(_payment(tenant, customer_id)).encode()
    response = client.request("POST", "/v1/transactions", tenant.live_key, content=content, headers=headers)
    error = expect(response, status, code)["error"]
    assert error.get("param") == param
    assert stored_records(runtime) == before


_FIELD_CASES = [
    ("amount true", {"amount": True}, "amount"),
    ("amount 2900.0", {"amount": 2900.0}, "amount"),
    ("amount string", {"amount": "2900"}, "amount"),
    ("amount null", {"amount": None}, "amount"),
    ("amount 2**31", {"amount": 2**31}, "amount"),
    ("amount huge", {"amount": 10**30}, "amount"),
    ("amount negative", {"amount": -1}, "amount"),
    ("amount 1e400", {"amount": float("inf")}, "amount"),
    ("amount object", {"amount": {"value": 1}}, "amount"),
    ("unknown field", {"coupon": "X"}, "coupon"),
    ("missing amount", {"amount": ...}, "amount"),
    ("missing payment_id", {"payment_id": ...}, "payment_id"),
    ("payment_id number", {"payment_id": 12}, "payment_id"),
    ("empty payment_id", {"payment_id": ""}, "payment_id"),
    ("currency upper case", {"currency": "USD"}, "currency"),
    ("currency with newline", {"currency": "usd\n"}, "currency"),
    ("currency array", {"currency": ["usd"]}, "currency"),
]


@pytest.mark.parametrize(
    ("changes", "param"), [c[1:] for c in _FIELD_CASES], ids=[c[0] for c in _FIELD_CASES]
)
def test_mistyped_unknown_or_missing_fields_are_validation_errors(
    client: Client,
    runtime: Runtime,
    tenant: Tenant,
    customer_id: str,
    changes: dict[str, Any],
    param: str,
) -> None:
    before = stored_records(runtime)
    body = _payment(tenant, customer_id, **changes)
    if body.get("amount") == float("inf"):
        content = json.dumps(body).replace("Infinity", "1e400").encode()
        response = client.request("POST", "/v1/transactions", tenant.live_key, content=content, headers=_JSON)
    else:
        response = client.post("/v1/transactions", tenant.live_key, body)
    error = expect(response, 400, "validation_error")["error"]
    assert error["param"] == param
    assert stored_records(runtime) == before


def test_bodies_over_one_mebibyte_are_too_large(
    client: Client, runtime: Runtime, tenant: Tenant, customer_id: str
) -> None:
    before = stored_records(runtime)
    body = {**_payment(tenant, customer_id), "padding": "x" * (1024 * 1024)}
    expect(client.post("/v1/transactions", tenant.live_key, body), 413, "body_too_large")
    # Without a Content-Length the stream is cut at the limit all the same.
    chunks = (b"x" * 65536 for _ in range(17))
    response = client.http.post(
        "/v1/transactions",
        content=chunks,
        headers={"Authorization": f"Bearer {tenant.live_key}", **_JSON},
    )
    expect(response, 413, "body_too_large")
    assert stored_records(runtime) == before


def test_a_json_suffix_media_type_is_json(client: Client, tenant: Tenant, customer_id: str) -> None:
    content = json.dumps(_payment(tenant, customer_id)).encode()
    headers = {"Content-Type": "application/vnd.refcore+json; charset=utf-8"}
    expect(client.request("POST", "/v1/transactions", tenant.live_key, content=content, headers=headers), 201)


def test_a_zero_payment_is_history_but_a_zero_refund_is_refused(
    client: Client, runtime: Runtime, tenant: Tenant, customer_id: str
) -> None:
    payment = expect(
        client.post("/v1/transactions", tenant.live_key, _payment(tenant, customer_id, amount=0)), 201
    )
    assert payment["commission_amount"] == 0
    before = stored_records(runtime)
    refund = {"refund_id": "re_1", "payment_id": "pay_1", "amount": 0}
    assert (
        expect(client.post("/v1/transactions/refunds", tenant.live_key, refund), 400)["error"]["param"]
        == "amount"
    )
    dispute = {"dispute_id": "dp_1", "payment_id": "pay_1", "status": "escalated", "amount": 1}
    error = expect(client.post("/v1/transactions/disputes", tenant.live_key, dispute), 400)["error"]
    assert (error["code"], error["param"]) == ("validation_error", "status")
    assert stored_records(runtime) == before


def test_nested_fields_are_checked_strictly(client: Client, runtime: Runtime, tenant: Tenant) -> None:
    before = stored_records(runtime)
    program = {
        "app_id": tenant.app_id,
        "name": "Second",
        "slug": "second",
        "currency": "usd",
        "commission": {"type": "percent", "bps": "2000"},
    }
    cases = [
        ({**program}, "commission.bps"),
        ({**program, "commission": {"type": "percent", "bps": 20, "extra": 1}}, "commission.extra"),
        ({**program, "commission": {"type": "share", "bps": 20}}, "commission.type"),
        ({**program, "commission": "20%"}, "commission"),
        ({**program, "commission": {"type": "percent", "bps": 10001}}, "commission.bps"),
        ({**program, "commission": {"type": "fixed", "amount": 100}, "hold_days": 1.5}, "hold_days"),
        ({**program, "commission": {"type": "fixed", "amount": 100}, "auto_approve": "yes"}, "auto_approve"),
    ]
    for body, param in cases:
        error = expect(client.post("/v1/programs", tenant.session, body), 400, "validation_error")["error"]
        assert error["param"] == param, (body, error)
    assert stored_records(runtime) == before


def test_a_program_slug_is_accepted_in_any_case_and_kept_lower_case(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    """Probe J: ``UpperSlug`` had been ``400`` although slugs, like link codes, are accepted in any
    case (docs/decisions.md). It is stored lower-case, so it is taken in every case and the join
    page finds it by any."""
    program = {
        "app_id": tenant.app_id,
        "name": "Upper",
        "currency": "usd",
        "commission": {"type": "percent", "bps": 2000},
    }
    created = expect(client.post("/v1/programs", tenant.session, {**program, "slug": "UpperSlug"}), 201)
    assert created["slug"] == "upperslug"
    before = stored_records(runtime)
    for taken in ("upperslug", "UPPERSLUG"):
        error = expect(client.post("/v1/programs", tenant.session, {**program, "slug": taken}), 400)["error"]
        assert (error["code"], error["param"]) == ("validation_error", "slug")
    # U+212A KELVIN SIGN lower-cases to "k": refused, never folded into an ASCII slug.
    kelvin = {**program, "slug": "\u212aelvin"}
    expect(client.post("/v1/programs", tenant.session, kelvin), 400, "validation_error")
    assert stored_records(runtime) == before
    assert expect(client.get("/v1/join/UPPERSLUG"), 200)["program"]["id"] == created["id"]


def test_patch_refuses_null_for_a_setting(client: Client, runtime: Runtime, tenant: Tenant) -> None:
    before = stored_records(runtime)
    for field in ("name", "hold_days", "commission", "auto_approve"):
        response = client.patch(f"/v1/programs/{tenant.program_id}", tenant.session, {field: None})
        assert expect(response, 400, "validation_error")["error"]["param"] == field
    expect(client.patch(f"/v1/programs/{tenant.program_id}", tenant.session, {"slug": "new"}), 400)
    assert stored_records(runtime) == before
    changed = expect(client.patch(f"/v1/programs/{tenant.program_id}", tenant.session, {"hold_days": 0}), 200)
    assert changed["hold_days"] == 0 and changed["name"] == "acme partners"


def test_action_routes_take_an_empty_body_or_an_empty_object(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    path = f"/v1/programs/{tenant.program_id}"
    before = stored_records(runtime)
    bad = [
        (b'{"reason": "x"}', _JSON, "validation_error"),
        (b"{nope", _JSON, "invalid_json"),
        (b"reason=x", {"Content-Type": "application/x-www-form-urlencoded"}, "invalid_json"),
    ]
    for content, headers, code in bad:
        response = client.request("POST", f"{path}/pause", tenant.session, content=content, headers=headers)
        expect(response, 400, code)
    assert stored_records(runtime) == before
    expect(client.request("POST", f"{path}/pause", tenant.session), 200)
    resumed = client.request("POST", f"{path}/resume", tenant.session, content=b"{}", headers=_JSON)
    assert expect(resumed, 200)["status"] == "active"
    expect(client.request("POST", f"{path}/resume", tenant.session), 409, "state_conflict")


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"starting_after": ""}, "starting_after"),
        ({"environment": "staging"}, "environment"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_query_parameters_are_validation_errors(
    client: Client, tenant: Tenant, query: dict[str, str], param: str
) -> None:
    response = client.get("/v1/clicks", tenant.session, app_id=tenant.app_id, **query)
    assert expect(response, 400, "validation_error")["error"]["param"] == param


def test_a_repeated_query_parameter_is_refused(client: Client, tenant: Tenant) -> None:
    response = client.http.get(
        f"/v1/clicks?limit=1&limit=2&app_id={tenant.app_id}",
        headers={"Authorization": f"Bearer {tenant.session}"},
    )
    assert expect(response, 400, "validation_error")["error"]["param"] == "limit"
