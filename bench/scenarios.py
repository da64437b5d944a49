"""The scenarios of issue 9: what each wrk connection sends, and how to check that writes stuck.

Every write carries a unique ID built from the wrk run's label (``{uid}``), so no request is
an idempotent replay. After a write scenario the harness counts the rows carrying that run's
label in the database: every acknowledged (2xx) write must be there ("committed before the
answer"); the count may be higher when requests were still in flight as wrk stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from attrs import frozen
from sqlalchemy import Connection, Table, func, select

from bench.world import REFUND_AMOUNT, World
from bench.wrk import Load
from refcore_sqlstore import tables

JSON_HEADERS = {"Content-Type": "application/json"}
BROWSER_HEADERS = {
    **JSON_HEADERS,
    "User-Agent": "Mozilla/5.0 (bench) refcore/1.0",
    "Origin": "https://shop.example",
}


def _auth(key: str) -> dict[str, str]:
    return {**JSON_HEADERS, "Authorization": f"Bearer {key}"}


def _json(template: Mapping[str, object]) -> str:
    """A JSON body whose string values may hold ``{uid}`` / ``{pool:name}`` placeholders."""
    return json.dumps(template, separators=(",", ":"))


@frozen
class Written:
    """Where a scenario's rows land, to count them: ``table.column LIKE pattern % label``."""

    table: Table
    column: str
    pattern: str


@frozen
class Scenario:
    key: str
    title: str
    load: Callable[[World], Load | None]
    written: Written | None = None
    #: What the "ratio" target compares, if any: the minimum share of the ceiling's requests/s.
    ceiling_share_target: float | None = None


def public_capture(world: World) -> Load:
    body = {"via": world.link_codes[0], "page": "https://shop.example/pricing?via=x&n={uid}"}
    return Load("POST", "/v1/capture", BROWSER_HEADERS, _json(body))


def server_capture(world: World) -> Load:
    body = {
        "via": world.link_codes[0],
        "page": "https://shop.example/pricing?via=x&n={uid}",
        "visitor_ip": "198.51.100.7",
        "visitor_user_agent": "Mozilla/5.0 (bench)",
    }
    return Load("POST", "/v1/capture", _auth(world.live_key), _json(body))


def identify(world: World) -> Load:
    body = {
        "click_id": "{pool:clicks}",
        "external_customer_id": "cus-{uid}",
        "email": "c-{uid}@customers.example",
    }
    return Load("POST", "/v1/identify", _auth(world.live_key), _json(body), {"clicks": world.clicks})


def payment(world: World) -> Load:
    body = {
        "payment_id": "pay-{uid}",
        "customer_id": "{pool:customers}",
        "program_id": world.program_id,
        "amount": 10000,
        "currency": "usd",
    }
    return Load(
        "POST", "/v1/transactions", _auth(world.live_key), _json(body), {"customers": world.customers}
    )


def refund(world: World) -> Load:
    body = {"refund_id": "re-{uid}", "payment_id": "{pool:payments}", "amount": REFUND_AMOUNT}
    pools = {"payments": world.refundable_payments}
    return Load("POST", "/v1/transactions/refunds", _auth(world.live_key), _json(body), pools)


def commissions_page(world: World) -> Load:
    return Load("GET", "/v1/commissions?limit=25", _auth(world.live_key))


def payout_balance(world: World) -> Load | None:
    route = world.balance_route()
    if route is None:
        return None
    path, key = route
    return Load("GET", path, _auth(key))


def steady_payout_balance(world: World) -> Load | None:
    """The last affiliate's: in the scaling database its history stays the same size."""
    route = world.balance_route(len(world.affiliate_ids) - 1)
    if route is None:
        return None
    path, key = route
    return Load("GET", path, _auth(key))


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "public_capture",
        "public capture (POST /v1/capture, no key)",
        public_capture,
        Written(tables.clicks, "page", "%n={label}-%"),
        ceiling_share_target=0.5,
    ),
    Scenario(
        "server_capture",
        "server capture (POST /v1/capture, App key)",
        server_capture,
        Written(tables.clicks, "page", "%n={label}-%"),
    ),
    Scenario(
        "identify",
        "identify (POST /v1/identify)",
        identify,
        Written(tables.customers, "external_customer_id", "cus-{label}-%"),
    ),
    Scenario(
        "payment",
        "payment (POST /v1/transactions)",
        payment,
        Written(tables.payments, "payment_id", "pay-{label}-%"),
        ceiling_share_target=0.25,
    ),
    Scenario(
        "refund",
        "refund (POST /v1/transactions/refunds)",
        refund,
        Written(tables.refunds, "refund_id", "re-{label}-%"),
    ),
    Scenario("commissions_page", "commissions list page (GET /v1/commissions?limit=25)", commissions_page),
    Scenario("payout_balance", "payout balance (GET /v1/payout-balance, affiliate key)", payout_balance),
)


def ready_payouts_page(world: World) -> Load:
    return Load("GET", f"/v1/ready-payouts?program_id={world.program_id}&limit=25", _auth(world.live_key))


#: The scaling reads: the App's newest commissions page, the balance of an affiliate holding a
#: tenth of all entries (its history grows with the database), the balance of an affiliate
#: whose history stays at 1,000 entries while the database grows around it, and the program's
#: page of ready payouts (every affiliate's available balance: it had read each one's whole
#: history, 3.9 s at 100,000 entries; bench/history.md, thirty-sixth session).
STEADY = Scenario(
    "steady_balance",
    "payout balance of an affiliate with a fixed 1,000 entries",
    steady_payout_balance,
)
READY_PAYOUTS = Scenario(
    "ready_payouts",
    "ready payouts page (GET /v1/ready-payouts?limit=25, App key)",
    ready_payouts_page,
)
SCALING_READS = ("commissions_page", "payout_balance", "steady_balance", "ready_payouts")


def by_key(key: str) -> Scenario:
    for scenario in (*SCENARIOS, STEADY, READY_PAYOUTS):
        if scenario.key == key:
            return scenario
    raise KeyError(key)


def count_written(connection: Connection, written: Written, label: str) -> int:
    column = written.table.c[written.column]
    statement = (
        select(func.count())
        .select_from(written.table)
        .where(column.like(written.pattern.format(label=label)))
    )
    return int(connection.execute(statement).scalar_one())
