"""Driving the API as a client would, and building tenants to test against.

:class:`Client` wraps Starlette's test client with one credential per call. :func:`new_tenant`
creates, through HTTP only (after the session, which the CLI or the library mints), an
organization, an App with keys of both modes, a program, an affiliate and a link.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning

from refcore.services.runtime import Runtime, Tx
from refcore.services.tenancy import create_session

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

JSON = dict[str, Any]


class Client:
    """HTTP calls against the app, in-process; ``token`` becomes ``Authorization: Bearer``."""

    def __init__(self, app: Starlette, *, client_address: tuple[str, int] = ("203.0.113.7", 50000)) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StarletteDeprecationWarning)
            self.http = TestClient(app, raise_server_exceptions=False, client=client_address)

    def request(
        self,
        method: str,
        path: str,
        token: str | None = None,
        *,
        json: Any = None,
        content: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> httpx.Response:
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        return self.http.request(method, path, json=json, content=content, headers=all_headers, params=params)

    def get(self, path: str, token: str | None = None, **params: Any) -> httpx.Response:
        return self.request("GET", path, token, params=params or None)

    def post(self, path: str, token: str | None = None, json: Any = None, **kw: Any) -> httpx.Response:
        return self.request("POST", path, token, json=json, **kw)

    def patch(self, path: str, token: str | None = None, json: Any = None) -> httpx.Response:
        return self.request("PATCH", path, token, json=json)

    def delete(self, path: str, token: str | None = None) -> httpx.Response:
        return self.request("DELETE", path, token)


def expect(response: httpx.Response, status: int, code: str | None = None) -> JSON:
    """The JSON body, after checking the status (and the error code, when given)."""
    assert response.status_code == status, (response.status_code, response.text)
    body: JSON = response.json() if response.content else {}
    if code is not None:
        assert body["error"]["code"] == code, body
    return body


@dataclass
class Tenant:
    session: str
    organization_id: str
    app_id: str
    live_key: str
    test_key: str
    program_id: str
    affiliate_id: str
    link_id: str
    link_code: str


def key_body(app_id: str, mode: str, kind: str = "app") -> JSON:
    return {"app_id": app_id, "kind": kind, "mode": mode}


def new_session(runtime: Runtime, email: str) -> str:
    _user, token = create_session(runtime, email)
    return token


def new_tenant(client: Client, runtime: Runtime, name: str, *, hold_days: int = 30) -> Tenant:
    session = new_session(runtime, f"owner@{name}.example")
    org = expect(client.post("/v1/organizations", session, {"name": f"{name} Inc"}), 201)
    app = expect(client.post("/v1/apps", session, {"organization_id": org["id"], "name": name}), 201)
    live = expect(
        client.post("/v1/api-keys", session, {"app_id": app["id"], "kind": "app", "mode": "live"}), 201
    )
    test = expect(
        client.post("/v1/api-keys", session, {"app_id": app["id"], "kind": "app", "mode": "test"}), 201
    )
    program = expect(
        client.post(
            "/v1/programs",
            session,
            {
                "app_id": app["id"],
                "name": f"{name} partners",
                "slug": f"{name}-partners",
                "currency": "usd",
                "commission": {"type": "percent", "bps": 2000},
                "hold_days": hold_days,
            },
        ),
        201,
    )
    affiliate = expect(
        client.post(
            "/v1/program-affiliates",
            session,
            {"program_id": program["id"], "email": f"ally@{name}.example", "name": "Ally"},
        ),
        201,
    )
    link = expect(
        client.post(f"/v1/program-affiliates/{affiliate['id']}/links", session, {"code": f"{name}-ally"}),
        201,
    )
    return Tenant(
        session=session,
        organization_id=org["id"],
        app_id=app["id"],
        live_key=live["secret"],
        test_key=test["secret"],
        program_id=program["id"],
        affiliate_id=affiliate["id"],
        link_id=link["id"],
        link_code=link["code"],
    )


@dataclass
class Activity:
    """One attributed customer's activity in one mode: click to dispute."""

    click_id: str
    customer_id: str
    referral_id: str
    payment_txn: str
    payment_id: str
    refund_txn: str
    refund_id: str
    dispute_dsp: str
    dispute_id: str
    commission_id: str


def new_activity(client: Client, tenant: Tenant, key: str, suffix: str) -> Activity:
    click = expect(client.post("/v1/capture", key, {"via": tenant.link_code}), 201)
    who = expect(
        client.post(
            "/v1/identify",
            key,
            {
                "click_id": click["click_id"],
                "external_customer_id": f"user-{suffix}",
                "email": f"u{suffix}@x.io",
            },
        ),
        201,
    )
    payment = expect(
        client.post(
            "/v1/transactions",
            key,
            {
                "payment_id": f"pay_{suffix}",
                "customer_id": who["customer_id"],
                "program_id": tenant.program_id,
                "amount": 10000,
                "currency": "usd",
            },
        ),
        201,
    )
    refund = expect(
        client.post(
            "/v1/transactions/refunds",
            key,
            {"refund_id": f"re_{suffix}", "payment_id": f"pay_{suffix}", "amount": 1000},
        ),
        201,
    )
    dispute = expect(
        client.post(
            "/v1/transactions/disputes",
            key,
            {"dispute_id": f"dp_{suffix}", "payment_id": f"pay_{suffix}", "status": "opened", "amount": 1000},
        ),
        201,
    )
    entries = expect(client.get("/v1/commissions", key, transaction_id=payment["id"]), 200)
    return Activity(
        click_id=click["click_id"],
        customer_id=who["customer_id"],
        referral_id=who["referral_id"],
        payment_txn=payment["id"],
        payment_id=f"pay_{suffix}",
        refund_txn=refund["id"],
        refund_id=f"re_{suffix}",
        dispute_dsp=dispute["id"],
        dispute_id=f"dp_{suffix}",
        commission_id=entries["data"][-1]["id"],
    )


#: Every repository a request could write to, for "bad input changes nothing".
WRITTEN_REPOSITORIES = (
    "organizations",
    "apps",
    "api_keys",
    "programs",
    "program_affiliates",
    "links",
    "clicks",
    "customers",
    "referrals",
    "payments",
    "refunds",
    "disputes",
    "commission_entries",
    "events",
)


def stored_records(runtime: Runtime) -> dict[str, list[Any]]:
    """Every record of :data:`WRITTEN_REPOSITORIES`: equal before and after a refused request."""

    def read(tx: Tx) -> dict[str, list[Any]]:
        return {name: getattr(tx.uow, name).find_all({}) for name in WRITTEN_REPOSITORIES}

    return runtime.read(read)


def identified_customer(client: Client, tenant: Tenant) -> str:
    """A Live customer identified after a click on the tenant's link (attributed), by its ID."""
    click = expect(client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code}), 201)
    who = expect(
        client.post("/v1/identify", tenant.live_key, {"click_id": click["click_id"], "email": "c@x.io"}), 201
    )
    return str(who["customer_id"])
