"""Driving the processor integration as a developer and as the processor would."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime

import httpx

from refcore.models import App
from refcore.models.processor import ProcessorConnection
from refcore.services.runtime import Runtime, Tx
from tests.http.world import JSON, Client, Tenant, expect
from tests.processor import payloads

SECRET_KEY = "processor-tests-server-key-0123456789abcdef"
CONNECT_URL = "https://processor.example/apps/install?client_id=ca_refcore"
_numbers = itertools.count(1)


@dataclass
class Installation:
    """A completed install on the processor's side: its account and webhook signing secret."""

    account: str
    secret: str
    livemode: bool


def new_installation(*, livemode: bool = False) -> Installation:
    n = next(_numbers)
    return Installation(
        account=f"acct_1Nv0FGQ9RKHgCVdK{n:04d}",
        secret=f"whsec_test{n:04d}Jf8cVbNqM2fGxK3nP7rTzW",
        livemode=livemode,
    )


def connect_link(client: Client, token: str, **body: object) -> JSON:
    return expect(client.post("/v1/processor/connect-link", token, dict(body)), 200)


def claim(
    client: Client, token: str, state: str, installation: Installation, **body: object
) -> httpx.Response:
    return client.post(
        "/v1/processor/claim-pending-install",
        token,
        {"state": state, "account_id": installation.account, "webhook_secret": installation.secret, **body},
    )


def connect(client: Client, tenant: Tenant, installation: Installation) -> JSON:
    """Connect-link, install, claim: the whole flow with the session, in the installation's mode."""
    mode = "live" if installation.livemode else "test"
    link = connect_link(client, tenant.session, app_id=tenant.app_id, mode=mode)
    return expect(claim(client, tenant.session, link["state"], installation), 201)


def deliver(
    client: Client,
    installation: Installation,
    event_type: str,
    obj: JSON,
    *,
    at: datetime,
    event_id: str | None = None,
    sign_with: str | None = None,
    account: str | None = None,
) -> httpx.Response:
    """One delivery: the event as the processor sends it, signed at ``at``."""
    body = payloads.encode(
        payloads.event(
            event_type,
            obj,
            account=account or installation.account,
            livemode=installation.livemode,
            created=at,
            event_id=event_id,
        )
    )
    header = payloads.sign(body, sign_with or installation.secret, at)
    return post_event(client, body, header)


def post_event(client: Client, body: bytes, header: str | None) -> httpx.Response:
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "Stripe/1.0"}
    if header is not None:
        headers["Stripe-Signature"] = header
    return client.request("POST", "/v1/processor/events", content=body, headers=headers)


def referred_customer(client: Client, tenant: Tenant, key: str, suffix: str) -> JSON:
    """Click and identify: the identify response, whose ``processor_metadata`` the App attaches."""
    click = expect(client.post("/v1/capture", key, {"via": tenant.link_code}), 201)
    return expect(
        client.post(
            "/v1/identify",
            key,
            {
                "click_id": click["click_id"],
                "external_customer_id": f"user-{suffix}",
                "email": f"{suffix}@c.io",
            },
        ),
        201,
    )


def stored_app(runtime: Runtime, app_id: str) -> App:
    def work(tx: Tx) -> App:
        app = tx.uow.apps.get(app_id)
        assert app is not None
        return app

    return runtime.read(work)


def stored_connections(runtime: Runtime, app_id: str) -> list[ProcessorConnection]:
    return runtime.read(lambda tx: tx.uow.processor_connections.find_all({"app_id": app_id}))


def commission_entries(client: Client, token: str, **filters: str) -> list[JSON]:
    """Every commission entry of the key's App and mode, oldest first."""
    listed = expect(client.get("/v1/commissions", token, limit=100, **filters), 200)
    return list(reversed(listed["data"]))
