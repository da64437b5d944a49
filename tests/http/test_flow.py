"""The whole referral-to-commission flow through HTTP, on every store.

Session, organization, App, keys of both modes, program, affiliate, link, public and server
capture, identify, payment, replay, refund, the dispute lifecycle, commissions, and the balance
that follows once the hold period has passed.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.services.commissions import payout_balance
from refcore.services.runtime import Runtime
from refcore.services.tenancy import authenticate
from refcore_http.app import create_app
from refcore_http.settings import MAX_SESSION_TTL_HOURS, Settings
from tests.http.world import Client, expect, key_body, new_session
from tests.stores import STORES


@pytest.fixture(params=sorted(STORES))
def store_runtime(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[Runtime]:
    with STORES[request.param](clock) as rt:
        yield rt


def _entries(client: Client, token: str, **query: str) -> list[tuple[str, int, str]]:
    body = expect(client.get("/v1/commissions", token, **query), 200)
    assert body["object"] == "list"
    return [(e["kind"], e["amount"], e["status"]) for e in reversed(body["data"])]


def test_referral_to_commission_flow_through_http(store_runtime: Runtime, clock: ManualClock) -> None:
    rt = store_runtime
    # The flow runs a month past its session's start (a commission's hold): a lifetime that outlasts it.
    client = Client(
        create_app(rt, Settings(database_url="memory://", session_ttl_hours=MAX_SESSION_TTL_HOURS))
    )
    session = new_session(rt, "dev@example.com")

    # -- configuration ---------------------------------------------------------------------
    org = expect(client.post("/v1/organizations", session, {"name": "Acme"}), 201)
    app = expect(client.post("/v1/apps", session, {"organization_id": org["id"], "name": "Acme App"}), 201)
    live = expect(client.post("/v1/api-keys", session, key_body(app["id"], "live")), 201)
    test = expect(client.post("/v1/api-keys", session, key_body(app["id"], "test")), 201)
    assert live["secret"].startswith("key_app_") and test["secret"].startswith("key_test_app_")
    listed_keys = expect(client.get("/v1/api-keys", session, app_id=app["id"]), 200)["data"]
    assert {k["id"] for k in listed_keys} == {live["id"], test["id"]}
    assert all("secret" not in k for k in listed_keys)
    live_key, test_key = live["secret"], test["secret"]

    program = expect(
        client.post(
            "/v1/programs",
            session,
            {
                "app_id": app["id"],
                "name": "Partners",
                "slug": "acme-partners",
                "currency": "usd",
                "commission": {"type": "percent", "bps": 2000},
                "hold_days": 30,
            },
        ),
        201,
    )
    affiliate = expect(
        client.post(
            "/v1/program-affiliates",
            session,
            {"program_id": program["id"], "email": "ally@example.com", "name": "Ally"},
        ),
        201,
    )
    assert affiliate["status"] == "active"
    link = expect(
        client.post(f"/v1/program-affiliates/{affiliate['id']}/links", session, {"code": "Ally"}), 201
    )
    assert link["code"] == "ally"

    # -- tracking: a browser landing (public) and a server-side capture --------------------
    public = expect(
        client.post(
            "/v1/capture",
            json={"via": "ALLY", "page": "https://acme.example/?via=ally"},
            headers={"User-Agent": "Browser/1.0", "Origin": "https://acme.example"},
        ),
        201,
    )
    assert public["livemode"] is True
    server = expect(
        client.post(
            "/v1/capture",
            live_key,
            {"via": "ally", "visitor_ip": "198.51.100.4", "visitor_user_agent": "Browser/2.0"},
        ),
        201,
    )
    stored = rt.read(
        lambda tx: (tx.uow.clicks.get(public["click_id"]), tx.uow.clicks.get(server["click_id"]))
    )
    assert (stored[0].visitor_ip, stored[0].visitor_user_agent) == ("203.0.113.7", "Browser/1.0")
    assert (stored[1].visitor_ip, stored[1].visitor_user_agent) == ("198.51.100.4", "Browser/2.0")

    identify = {"click_id": public["click_id"], "external_customer_id": "u-1", "email": "carol@example.com"}
    who = expect(client.post("/v1/identify", live_key, identify), 201)
    assert who["attributed"] is True and who["attribution_source"] == "click"
    assert who["processor_metadata"] == {
        "service_click_id": public["click_id"],
        "service_customer_id": who["customer_id"],
        "service_program_id": program["id"],
    }
    again = expect(client.post("/v1/identify", live_key, identify), 200)
    assert (again["customer_id"], again["referral_id"]) == (who["customer_id"], who["referral_id"])

    # -- revenue ---------------------------------------------------------------------------
    payment_body = {
        "payment_id": "pay_1",
        "customer_id": who["customer_id"],
        "program_id": program["id"],
        "amount": 10000,
        "currency": "usd",
    }
    payment = expect(client.post("/v1/transactions", live_key, payment_body), 201)
    assert (payment["amount"], payment["commission_amount"], payment["livemode"]) == (10000, 2000, True)
    replay = expect(client.post("/v1/transactions", live_key, payment_body), 200)
    assert replay == payment
    expect(
        client.post("/v1/transactions", live_key, {**payment_body, "amount": 9999}),
        409,
        "idempotency_conflict",
    )

    refund_body = {"refund_id": "re_1", "payment_id": "pay_1", "amount": 2500}
    refund = expect(client.post("/v1/transactions/refunds", live_key, refund_body), 201)
    assert expect(client.post("/v1/transactions/refunds", live_key, refund_body), 200) == refund
    assert expect(client.get(f"/v1/transactions/{refund['id']}", live_key), 200)["object"] == "refund"

    dispute = {"dispute_id": "dp_1", "payment_id": "pay_1", "amount": 5000}
    opened = expect(client.post("/v1/transactions/disputes", live_key, {**dispute, "status": "opened"}), 201)
    assert opened["status"] == "opened"
    # The dispute holds the commission it may take back, never the reversal (docs/decisions.md).
    assert _entries(client, live_key) == [("earned", 2000, "held"), ("reversal", -500, "pending")]
    balance = payout_balance(rt, authenticate(rt, session), affiliate["id"])
    assert (balance.held, balance.pending, balance.available) == (2000, -500, 0)

    lost = expect(client.post("/v1/transactions/disputes", live_key, {**dispute, "status": "lost"}), 200)
    assert lost["id"] == opened["id"] and lost["status"] == "lost"
    reinstated = expect(
        client.post("/v1/transactions/disputes", live_key, {**dispute, "status": "funds_reinstated"}), 200
    )
    assert reinstated["status"] == "funds_reinstated"
    late_open = expect(
        client.post("/v1/transactions/disputes", live_key, {**dispute, "status": "opened"}), 200
    )
    assert late_open["status"] == "funds_reinstated"
    expect(
        client.post("/v1/transactions/disputes", live_key, {**dispute, "status": "won"}),
        409,
        "dispute_conflict",
    )

    assert _entries(client, live_key) == [
        ("earned", 2000, "pending"),
        ("reversal", -500, "pending"),
        ("reversal", -1000, "pending"),
        ("reinstatement", 1000, "pending"),
    ]
    balance = payout_balance(rt, authenticate(rt, session), affiliate["id"])
    assert (balance.pending, balance.held, balance.available) == (1500, 0, 0)

    # -- test mode stays apart -------------------------------------------------------------
    test_click = expect(client.post("/v1/capture", test_key, {"via": "ally"}), 201)
    assert test_click["livemode"] is False
    expect(client.post("/v1/identify", test_key, identify), 409, "mode_mismatch")
    test_who = expect(
        client.post(
            "/v1/identify", test_key, {"click_id": test_click["click_id"], "external_customer_id": "u-1"}
        ),
        201,
    )
    assert test_who["customer_id"] != who["customer_id"] and test_who["livemode"] is False
    test_payment = {**payment_body, "customer_id": test_who["customer_id"], "amount": 5000}
    expect(client.post("/v1/transactions", test_key, test_payment), 201)
    assert _entries(client, test_key) == [("earned", 1000, "pending")]
    assert len(_entries(client, session, app_id=app["id"])) == 4  # sessions default to live
    assert _entries(client, session, app_id=app["id"], environment="test") == [("earned", 1000, "pending")]

    # -- the hold passes -------------------------------------------------------------------
    clock.advance(timedelta(days=31))
    assert {status for _, _, status in _entries(client, live_key)} == {"approved"}
    balance = payout_balance(rt, authenticate(rt, session), affiliate["id"])
    assert (balance.pending, balance.held, balance.available, balance.paid) == (0, 0, 1500, 0)

    # -- reads by ID answer what the writes returned ----------------------------------------
    assert expect(client.get(f"/v1/transactions/{payment['id']}", session), 200)["refunded_amount"] == 2500
    assert expect(client.get(f"/v1/transactions/disputes/{opened['id']}", live_key), 200)["status"] == (
        "funds_reinstated"
    )
    assert expect(client.get(f"/v1/clicks/{public['click_id']}", live_key), 200)["link_id"] == link["id"]
    assert expect(client.get(f"/v1/referrals/{who['referral_id']}", session), 200)["attributed"] is True
    customers = expect(client.get("/v1/customers", live_key), 200)["data"]
    assert [c["id"] for c in customers] == [who["customer_id"]]
    payments = expect(client.get("/v1/transactions", session, app_id=app["id"]), 200)["data"]
    assert [p["payment_id"] for p in payments] == ["pay_1"]
