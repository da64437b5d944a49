"""The tenant every scenario runs against, built the way an operator and a Developer would.

The dashboard session comes from the library (what ``refcore session`` does); everything else
goes through the HTTP API of the running server: organization, App, Live App key, program,
affiliates with one link each, and the pools the scenarios walk (clicks to identify, customers
to pay, large payments to refund). The affiliate key is issued through the library, as a
confirmed hosted signup would, because this API issues it only at the end of the join flow.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
from attrs import frozen

from refcore.services.runtime import Tx
from refcore.services.tenancy import IssuedKey, create_session, issue_affiliate_key
from refcore_http.store import open_store

PROGRAM_BPS = 2000
#: Refunds take 1,000 from payments of 100,000,000 (each appends a reversal of 200): room for
#: 100,000 refunds per payment.
REFUND_PAYMENT_AMOUNT = 100_000_000
REFUND_AMOUNT = 1000


def prepare_database(database_url: str, email: str = "bench@refcore.example") -> str:
    """Migrate the database and mint a dashboard session; returns its token."""
    store = open_store(database_url)
    try:
        store.migrate()
        _user, token = create_session(store.runtime, email)
    finally:
        store.dispose()
    return token


def _issue(tx: Tx, *, app_id: str, affiliate_id: str) -> IssuedKey:
    return issue_affiliate_key(tx, app_id, affiliate_id)


def affiliate_keys(database_url: str, app_id: str, program_affiliate_ids: list[str]) -> list[str]:
    """One affiliate key per program affiliate, in order."""
    store = open_store(database_url)
    try:
        return [
            store.runtime.transaction(partial(_issue, app_id=app_id, affiliate_id=affiliate)).secret
            for affiliate in program_affiliate_ids
        ]
    finally:
        store.dispose()


@frozen
class World:
    base_url: str
    session: str
    app_id: str
    live_key: str
    program_id: str
    affiliate_ids: list[str]
    link_ids: list[str]
    link_codes: list[str]
    #: One key per affiliate; the scenarios read the first affiliate's balance.
    affiliate_keys: list[str]
    clicks: list[str]
    customers: list[str]
    refundable_payments: list[str]
    index: list[dict[str, Any]]

    def balance_route(self, affiliate: int = 0) -> tuple[str, str] | None:
        """``(path, credential)`` of an affiliate's payout balance read, when the server has one."""
        for endpoint in self.index:
            if endpoint["method"] == "GET" and endpoint["path"] == "/v1/payout-balance":
                return f"/v1/payout-balance?program_id={self.program_id}", self.affiliate_keys[affiliate]
        return None


class Api:
    def __init__(self, base_url: str, token: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30.0)
        self.token = token

    def call(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        response = self.http.request(method, path, json=body, headers=headers)
        if response.status_code >= 300:
            raise RuntimeError(
                f"set-up call {method} {path} answered {response.status_code}: {response.text}"
            )
        return response.json()


def build_world(
    base_url: str,
    database_url: str,
    session: str,
    *,
    name: str = "bench",
    affiliates: int = 1,
    clicks: int = 64,
    customers: int = 64,
    refundable_payments: int = 128,
) -> World:
    api = Api(base_url, session)
    org = api.call("POST", "/v1/organizations", {"name": f"{name} Inc"})
    app = api.call("POST", "/v1/apps", {"organization_id": org["id"], "name": name})
    live = api.call("POST", "/v1/api-keys", {"app_id": app["id"], "kind": "app", "mode": "live"})["secret"]
    program = api.call(
        "POST",
        "/v1/programs",
        {
            "app_id": app["id"],
            "name": f"{name} partners",
            "slug": f"{name}-partners",
            "currency": "usd",
            "commission": {"type": "percent", "bps": PROGRAM_BPS},
            "hold_days": 30,
        },
    )
    affiliate_ids: list[str] = []
    link_ids: list[str] = []
    codes: list[str] = []
    for n in range(affiliates):
        affiliate = api.call(
            "POST",
            "/v1/program-affiliates",
            {"program_id": program["id"], "email": f"ally{n}@{name}.example", "name": f"Ally {n}"},
        )
        link = api.call(
            "POST", f"/v1/program-affiliates/{affiliate['id']}/links", {"code": f"{name}-ally-{n}"}
        )
        affiliate_ids.append(affiliate["id"])
        link_ids.append(link["id"])
        codes.append(link["code"])

    click_ids = [
        api.call("POST", "/v1/capture", {"via": codes[0]}, token=live)["click_id"] for _ in range(clicks)
    ]
    customer_ids = [
        api.call(
            "POST",
            "/v1/identify",
            {"click_id": click_ids[n % len(click_ids)], "external_customer_id": f"{name}-payer-{n}"},
            token=live,
        )["customer_id"]
        for n in range(customers)
    ]
    payments: list[str] = []
    for n in range(refundable_payments):
        payment_id = f"{name}-refundable-{n}"
        api.call(
            "POST",
            "/v1/transactions",
            {
                "payment_id": payment_id,
                "customer_id": customer_ids[n % len(customer_ids)],
                "program_id": program["id"],
                "amount": REFUND_PAYMENT_AMOUNT,
                "currency": "usd",
            },
            token=live,
        )
        payments.append(payment_id)
    index = api.call("GET", "/v1")["endpoints"]
    api.http.close()
    return World(
        base_url=base_url,
        session=session,
        app_id=app["id"],
        live_key=live,
        program_id=program["id"],
        affiliate_ids=affiliate_ids,
        link_ids=link_ids,
        link_codes=codes,
        affiliate_keys=affiliate_keys(database_url, app["id"], affiliate_ids),
        clicks=click_ids,
        customers=customer_ids,
        refundable_payments=payments,
        index=index,
    )
