"""The whole external payout flow through HTTP, with a real HTTPS webhook receiver (interface 6.5).

Memory store, manual clock. The clock starts 31 days in the past so that, once the hold period
has been moved past, it is back at the real time: the receiver checks the signed timestamp
against its own clock, as a real receiver must.

Payments -> hold passes -> ready payouts -> batch -> dispatch -> ``payout.ready`` received and
verified -> instructions fetched with the Live key -> success reported twice with one
``Idempotency-Key`` (one effect) -> failure path (entries available again) -> mark-paid -> CSV.
"""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import Event, EventType
from refcore.services.runtime import Runtime, Tx
from refcore.services.tenancy import issue_affiliate_key
from refcore_http.app import create_app
from refcore_http.settings import MAX_SESSION_TTL_HOURS, Settings
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox, memory_runtime
from tests.http.world import Client, Tenant, expect, new_tenant
from tests.webhooks.pki import Pki, make_pki
from tests.webhooks.receiver import Receiver

SECRET_KEY = "test-only server secret key, 32+ characters long"
JSON = dict[str, Any]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(Path(tmp_path_factory.mktemp("payout-pki")))


@pytest.fixture
def receiver(pki: Pki) -> Iterator[Receiver]:
    with Receiver(pki).running() as running:
        yield running


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC) - timedelta(days=31))


@pytest.fixture
def database() -> MemoryDatabase:
    return MemoryDatabase()


@pytest.fixture
def runtime(clock: ManualClock, database: MemoryDatabase) -> Runtime:
    return memory_runtime(clock=clock, database=database)


@pytest.fixture
def client(runtime: Runtime) -> Client:
    # Payouts wait out a month's hold on the tenant's first session: a lifetime that outlasts it.
    settings = Settings(
        database_url="memory://", secret_key=SECRET_KEY, session_ttl_hours=MAX_SESSION_TTL_HOURS
    )
    return Client(create_app(runtime, settings))


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "payco")


def _affiliate_key(runtime: Runtime, tenant: Tenant, affiliate_id: str) -> str:
    def work(tx: Tx) -> str:
        return issue_affiliate_key(tx, tenant.app_id, affiliate_id).secret

    return runtime.transaction(work)


def _add_affiliate(client: Client, tenant: Tenant, email: str, name: str) -> tuple[str, str]:
    affiliate = expect(
        client.post(
            "/v1/program-affiliates",
            tenant.session,
            {"program_id": tenant.program_id, "email": email, "name": name},
        ),
        201,
    )
    link = expect(client.post(f"/v1/program-affiliates/{affiliate['id']}/links", tenant.session, {}), 201)
    return affiliate["id"], link["code"]


def _pay(client: Client, tenant: Tenant, code: str, payment_id: str, amount: int) -> None:
    key = tenant.live_key
    click = expect(client.post("/v1/capture", key, {"via": code}), 201)
    who = expect(
        client.post(
            "/v1/identify", key, {"click_id": click["click_id"], "external_customer_id": f"c-{payment_id}"}
        ),
        201,
    )
    body = {
        "payment_id": payment_id,
        "customer_id": who["customer_id"],
        "program_id": tenant.program_id,
        "amount": amount,
        "currency": "usd",
    }
    expect(client.post("/v1/transactions", key, body), 201)


def _events(runtime: Runtime, type: EventType) -> list[Event]:
    return runtime.read(lambda tx: tx.uow.events.find_all({"type": type}))


def _balance(client: Client, token: str, tenant: Tenant, **query: str) -> JSON:
    return expect(client.get("/v1/payout-balance", token, program_id=tenant.program_id, **query), 200)


def test_the_external_payout_flow_end_to_end(
    client: Client,
    runtime: Runtime,
    database: MemoryDatabase,
    clock: ManualClock,
    tenant: Tenant,
    receiver: Receiver,
    pki: Pki,
) -> None:
    session, live = tenant.session, tenant.live_key
    ally = tenant.affiliate_id
    ally_key = _affiliate_key(runtime, tenant, ally)
    bo, bo_code = _add_affiliate(client, tenant, "bo@payco.example", "Bo")

    # -- payments, then the hold period passes ----------------------------------------------
    _pay(client, tenant, tenant.link_code, "pay_1", 10_000)  # Ally earns 2 000
    _pay(client, tenant, tenant.link_code, "pay_2", 5_000)  # Ally earns 1 000
    _pay(client, tenant, bo_code, "pay_3", 20_000)  # Bo earns 4 000
    balance = _balance(client, ally_key, tenant)
    assert (balance["pending"], balance["available"], balance["livemode"]) == (3000, 0, True)
    assert expect(client.get("/v1/ready-payouts", session, program_id=tenant.program_id), 200)["data"] == []
    clock.advance(timedelta(days=31))
    assert _balance(client, ally_key, tenant)["available"] == 3000

    # -- the affiliate saves where to be paid ----------------------------------------------
    details = expect(
        client.request(
            "PUT",
            "/v1/payout-details",
            ally_key,
            json={"method": "paypal", "email": "ally@paypal.example"},
            params={"program_id": tenant.program_id},
        ),
        200,
    )
    assert details["object"] == "payout_details" and details["method"] == "paypal"

    # -- ready payouts, then a batch freezes them ------------------------------------------
    ready = expect(client.get("/v1/ready-payouts", live, program_id=tenant.program_id), 200)["data"]
    assert {(r["program_affiliate_id"], r["amount"]) for r in ready} == {(ally, 3000), (bo, 4000)}
    # Every object's id and created_at (decisions 10), the affiliate's: a pager that takes the last
    # row's id as the next cursor pages this list as any other (probe AL).
    listed = client.get("/v1/program-affiliates", session, program_id=tenant.program_id)
    joined = {a["id"]: a["created_at"] for a in expect(listed, 200)["data"]}
    assert [(r["id"], r["created_at"]) for r in ready] == [
        (r["program_affiliate_id"], joined[r["id"]]) for r in ready
    ]
    one = client.get("/v1/ready-payouts", live, program_id=tenant.program_id, limit=1)
    [first] = expect(one, 200)["data"]
    after = client.get("/v1/ready-payouts", live, program_id=tenant.program_id, starting_after=first["id"])
    assert [r["id"] for r in expect(after, 200)["data"]] == [r["id"] for r in ready if r["id"] != first["id"]]
    endpoint = expect(
        client.request(
            "PUT", f"/v1/apps/{tenant.app_id}/webhook", session, json={"url": receiver.url("/ok")}
        ),
        201,
    )
    receiver.secret = endpoint["secret"]
    batch = expect(client.post("/v1/payout-batches", session, {"program_id": tenant.program_id}), 201)
    assert (batch["status"], batch["total"], batch["execution_count"]) == ("prepared", 7000, 2)
    assert _balance(client, ally_key, tenant)["processing"] == 3000
    listed = expect(client.get("/v1/payout-batches", session, program_id=tenant.program_id), 200)["data"]
    assert [b["id"] for b in listed] == [batch["id"]]

    # -- dispatch: one payout.ready per affiliate, received and verified --------------------
    dispatched = expect(client.post(f"/v1/payout-batches/{batch['id']}/dispatch", session), 200)
    assert dispatched["status"] == "dispatched"
    assert {e["status"] for e in dispatched["executions"]} == {"ready"}
    expect(client.post(f"/v1/payout-batches/{batch['id']}/dispatch", session), 409, "state_conflict")
    execution_of = {e["program_affiliate_id"]: e["id"] for e in dispatched["executions"]}
    assert sorted(e.data["id"] for e in _events(runtime, EventType.PAYOUT_READY)) == sorted(
        execution_of.values()
    )

    dispatcher = WebhookDispatcher(
        runtime,
        MemoryOutbox(database),
        SecretBox(SECRET_KEY),
        Deliverer(allow_private_networks=True, ca_bundle=str(pki.ca_path)),
    )
    asyncio.run(dispatcher.drain())
    received = [h for h in receiver.hits("/ok") if h.payload["type"] == "payout.ready"]
    assert [h.problems for h in received] == [[], []]
    assert sorted(h.payload["data"]["id"] for h in received) == sorted(execution_of.values())
    for hit in received:
        data = hit.payload["data"]
        assert hit.payload["livemode"] is True
        assert "instructions" not in data and "payout_details" not in data and "email" not in data

    # -- the payout system fetches instructions with the Live key of the exact App ---------
    ally_execution = execution_of[ally]
    instructions = expect(client.get(f"/v1/payout-executions/{ally_execution}", live), 200)
    assert instructions["instructions"]["payout_details"]["email"] == "ally@paypal.example"
    assert (instructions["instructions"]["amount"], instructions["instructions"]["email"]) == (
        3000,
        "ally@payco.example",
    )
    expect(client.get(f"/v1/payout-executions/{ally_execution}", tenant.test_key), 403, "live_key_required")
    expect(client.get(f"/v1/payout-executions/{ally_execution}", session), 403, "live_key_required")
    stranger = new_tenant(client, runtime, "stranger")
    expect(
        client.get(f"/v1/payout-executions/{ally_execution}", stranger.live_key),
        404,
        "payout_execution_not_found",
    )

    # -- success reported twice with one Idempotency-Key: one effect -----------------------
    succeeded = f"/v1/payout-executions/{ally_execution}/succeeded"
    expect(client.post(succeeded, live), 400, "validation_error")
    # Two keys in one request (probe H): refused whatever the values, nothing reported, so the
    # first report below still applies. A proxy in front may have kept the other one.
    twice = [("Idempotency-Key", "pay-run-1"), ("Idempotency-Key", "pay-run-2")]
    sent_twice = client.http.post(succeeded, headers=[*twice, ("Authorization", f"Bearer {live}")])
    assert expect(sent_twice, 400, "validation_error")["error"]["param"] == "Idempotency-Key"
    first = expect(client.post(succeeded, live, headers={"Idempotency-Key": "pay-run-1"}), 200)
    again = expect(client.post(succeeded, live, headers={"Idempotency-Key": "pay-run-1"}), 200)
    assert first == again and first["status"] == "succeeded"
    expect(client.post(succeeded, live, headers={"Idempotency-Key": "pay-run-2"}), 409, "state_conflict")
    expect(
        client.post(
            f"/v1/payout-executions/{ally_execution}/failed", live, headers={"Idempotency-Key": "pay-run-1"}
        ),
        409,
        "state_conflict",
    )
    assert len(_events(runtime, EventType.COMMISSION_PAID)) == 2
    assert [e.data["id"] for e in _events(runtime, EventType.PAYOUT_SUCCEEDED)] == [ally_execution]
    assert _balance(client, ally_key, tenant)["paid"] == 3000
    statuses = expect(client.get("/v1/commissions", live, program_affiliate_id=ally), 200)["data"]
    assert {e["status"] for e in statuses} == {"paid"}

    # -- a key names one report of the App: spent on Ally's, it cannot report Bo's ----------
    bo_execution = execution_of[bo]
    spent = {"Idempotency-Key": "pay-run-1"}
    for outcome in ("succeeded", "failed"):
        reported = client.post(f"/v1/payout-executions/{bo_execution}/{outcome}", live, headers=spent)
        error = expect(reported, 409, "idempotency_conflict")["error"]
        assert error["param"] == "Idempotency-Key"
        assert ally_execution in error["message"] and "pay-run-1" not in error["message"]
    assert expect(client.get(f"/v1/payout-executions/{bo_execution}", live), 200)["status"] == "ready"
    assert _events(runtime, EventType.PAYOUT_FAILED) == []

    # -- failure path: Bo's entries are available again ------------------------------------
    failed = expect(
        client.post(
            f"/v1/payout-executions/{bo_execution}/failed", live, headers={"Idempotency-Key": "bo-1"}
        ),
        200,
    )
    assert failed["status"] == "failed"
    assert [e.data["id"] for e in _events(runtime, EventType.PAYOUT_FAILED)] == [bo_execution]
    bo_balance = _balance(client, session, tenant, program_affiliate_id=bo)
    assert (bo_balance["available"], bo_balance["processing"], bo_balance["paid"]) == (4000, 0, 0)

    # -- mark-paid: Bo is paid by hand -------------------------------------------------------
    [bo_ready] = expect(client.get("/v1/ready-payouts", session, program_id=tenant.program_id), 200)["data"]
    assert (bo_ready["program_affiliate_id"], bo_ready["amount"], bo_ready["payout_execution_id"]) == (
        bo,
        4000,
        None,
    )
    marked = expect(client.post(f"/v1/ready-payouts/{bo}/mark-paid", session), 200)
    assert (marked["status"], marked["amount"], marked["completed_manually"]) == ("succeeded", 4000, True)
    assert [e.data["id"] for e in _events(runtime, EventType.PAYOUT_SUCCEEDED)][-1] == marked["id"]
    expect(client.post(f"/v1/ready-payouts/{bo}/mark-paid", session), 409, "state_conflict")
    expect(client.post(f"/v1/ready-payouts/{bo}/mark-paid", tenant.test_key), 403, "live_key_required")

    # -- CSV export of what is ready now, formula cells neutralised -------------------------
    mallory, mallory_code = _add_affiliate(client, tenant, "mallory@payco.example", "=1+1")
    _pay(client, tenant, mallory_code, "pay_4", 10_000)
    clock.advance(timedelta(days=31))
    response = client.post("/v1/ready-payouts/csv", session, {"program_id": tenant.program_id})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows[0][:5] == ["program_affiliate_id", "email", "name", "amount", "currency"]
    assert rows[1:] == [[mallory, "mallory@payco.example", "'=1+1", "2000", "usd", "", "", "", "", "", ""]]


def test_payout_requests_through_http(
    client: Client, runtime: Runtime, clock: ManualClock, tenant: Tenant
) -> None:
    key = _affiliate_key(runtime, tenant, tenant.affiliate_id)
    body = {"program_id": tenant.program_id}
    expect(client.post("/v1/payout-requests", key, body), 409, "state_conflict")
    _pay(client, tenant, tenant.link_code, "pay_1", 10_000)
    clock.advance(timedelta(days=31))
    request = expect(client.post("/v1/payout-requests", key, body), 201)
    assert (request["object"], request["amount"], request["status"]) == ("payout_request", 2000, "open")
    expect(client.post("/v1/payout-requests", tenant.live_key, body), 403, "forbidden")
    listed = expect(client.get("/v1/payout-requests", tenant.session, program_id=tenant.program_id), 200)
    assert [r["id"] for r in listed["data"]] == [request["id"]]
    assert expect(client.get(f"/v1/payout-requests/{request['id']}", key), 200)["id"] == request["id"]
    expect(client.post(f"/v1/payout-requests/{request['id']}/decline", key), 403, "forbidden")
    declined = expect(client.post(f"/v1/payout-requests/{request['id']}/decline", tenant.session), 200)
    assert declined["status"] == "declined"
    expect(client.post(f"/v1/payout-requests/{request['id']}/decline", tenant.session), 409, "state_conflict")


def test_payout_details_need_the_affiliate_key_and_a_known_method(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    key = _affiliate_key(runtime, tenant, tenant.affiliate_id)
    query = {"program_id": tenant.program_id}
    expect(client.get("/v1/payout-details", key, **query), 404, "payout_details_not_found")
    expect(
        client.request("PUT", "/v1/payout-details", key, json={"method": "cheque"}, params=query),
        400,
        "validation_error",
    )
    expect(
        client.request(
            "PUT", "/v1/payout-details", tenant.session, json={"method": "other", "notes": "x"}, params=query
        ),
        403,
        "forbidden",
    )
    expect(
        client.request("PUT", "/v1/payout-details", key, json={"method": "other", "notes": "x"}),
        400,
        "validation_error",
    )
    saved = expect(
        client.request(
            "PUT", "/v1/payout-details", key, json={"method": "other", "notes": "cash"}, params=query
        ),
        200,
    )
    read = expect(
        client.get("/v1/payout-details", tenant.session, program_affiliate_id=tenant.affiliate_id, **query),
        200,
    )
    assert read == saved


def test_the_index_lists_every_payout_endpoint(client: Client) -> None:
    index = expect(client.get("/v1"), 200)
    listed = {(e["method"], e["path"]) for e in index["endpoints"]}
    assert {
        ("GET", "/v1/payout-details"),
        ("PUT", "/v1/payout-details"),
        ("GET", "/v1/payout-balance"),
        ("GET", "/v1/payout-requests"),
        ("POST", "/v1/payout-requests"),
        ("POST", "/v1/payout-requests/:id/decline"),
        ("GET", "/v1/ready-payouts"),
        ("POST", "/v1/ready-payouts/csv"),
        ("POST", "/v1/ready-payouts/:programAffiliateId/mark-paid"),
        ("GET", "/v1/payout-batches"),
        ("POST", "/v1/payout-batches"),
        ("GET", "/v1/payout-batches/:id"),
        ("POST", "/v1/payout-batches/:id/dispatch"),
        ("POST", "/v1/payout-batches/:id/cancel"),
        ("GET", "/v1/payout-executions/:id"),
        ("POST", "/v1/payout-executions/:id/succeeded"),
        ("POST", "/v1/payout-executions/:id/failed"),
    } <= listed
    schemas = expect(client.get("/v1/openapi.json"), 200)["components"]["schemas"]
    assert {"PayoutExecution", "PayoutInstructions", "ReadyPayout", "PayoutBalance"} <= set(schemas)


def test_a_prepared_batch_canceled_over_http_gives_its_money_back(
    client: Client, runtime: Runtime, clock: ManualClock, tenant: Tenant
) -> None:
    """docs/payouts.md: ``POST /v1/payout-batches/:id/cancel`` takes a session or a Live App key
    of the App, answers the batch with its executions ``canceled``, and emits nothing; the
    money is available again. Anyone else gets the answers every payout route gives."""
    session = tenant.session
    cy, cy_code = _add_affiliate(client, tenant, "cy@payco.example", "Cy")
    _pay(client, tenant, cy_code, "pay_c1", 10_000)
    clock.advance(timedelta(days=31))
    batch = expect(client.post("/v1/payout-batches", session, {"program_id": tenant.program_id}), 201)
    cancel = f"/v1/payout-batches/{batch['id']}/cancel"
    expect(client.post(cancel, _affiliate_key(runtime, tenant, cy)), 403, "forbidden")
    expect(client.post(cancel, tenant.test_key), 403, "live_key_required")
    stranger = new_tenant(client, runtime, "stranger")
    expect(client.post(cancel, stranger.session), 404, "payout_batch_not_found")
    expect(client.post(cancel, stranger.live_key), 404, "payout_batch_not_found")
    assert _balance(client, session, tenant, program_affiliate_id=cy)["processing"] == 2000

    canceled = expect(client.post(cancel, tenant.live_key), 200)
    assert (canceled["id"], canceled["status"], canceled["dispatched_at"]) == (batch["id"], "canceled", None)
    assert canceled["canceled_at"] is not None
    assert [(e["status"], e["amount"]) for e in canceled["executions"]] == [("canceled", 2000)]
    assert expect(client.get(f"/v1/payout-batches/{batch['id']}", session), 200) == canceled
    balance = _balance(client, session, tenant, program_affiliate_id=cy)
    assert (balance["available"], balance["processing"]) == (2000, 0)
    assert _events(runtime, EventType.PAYOUT_READY) == []
    expect(client.post(cancel, session), 409, "state_conflict")
    expect(client.post(f"/v1/payout-batches/{batch['id']}/dispatch", session), 409, "state_conflict")
    expect(client.post(cancel.replace(batch["id"], "pbt_missing"), session), 404, "payout_batch_not_found")


def test_mark_paid_with_an_amount_records_only_a_payout_of_exactly_that_amount(
    client: Client, runtime: Runtime, clock: ManualClock, tenant: Tenant
) -> None:
    """Mark-paid names only the affiliate, so the money that became available after the operator
    looked (or after a timed-out mark-paid had already recorded the payout, on a retry) was
    recorded as paid though nobody sent it (found by a probe racing three processes). An
    ``amount`` in the body records the payout only if it is exactly that; bad input is refused
    and changes nothing."""
    session = tenant.session
    cy, cy_code = _add_affiliate(client, tenant, "cy@payco.example", "Cy")
    _pay(client, tenant, cy_code, "pay_c1", 10_000)
    clock.advance(timedelta(days=31))
    path = f"/v1/ready-payouts/{cy}/mark-paid"

    def unchanged() -> None:
        assert _balance(client, session, tenant, program_affiliate_id=cy)["available"] == 2000
        assert _events(runtime, EventType.PAYOUT_SUCCEEDED) == []

    # ``null`` too: read as left out, it had skipped the check and recorded whatever was ready
    # (probe AF).
    for bad in (True, 2000.0, "2000", 0, -2000, 2**63, [2000], {"value": 2000}, None):
        refused = expect(client.post(path, session, {"amount": bad}), 400, "validation_error")
        assert refused["error"]["param"] == "amount", bad
        unchanged()
    unknown = expect(client.post(path, session, {"amount": 2000, "amout": 2000}), 400, "validation_error")
    assert unknown["error"]["param"] == "amout"
    other = expect(client.post(path, session, {"amount": 1999}), 409, "state_conflict")
    assert other["error"]["param"] == "amount"
    assert "2000" in other["error"]["message"] and "1999" in other["error"]["message"]
    unchanged()

    marked = expect(client.post(path, session, {"amount": 2000}), 200)
    assert (marked["status"], marked["amount"]) == ("succeeded", 2000)

    # New money arrives; a retry of the same mark-paid must not record it as paid.
    _pay(client, tenant, cy_code, "pay_c2", 15_000)
    clock.advance(timedelta(days=31))
    expect(client.post(path, session, {"amount": 2000}), 409, "state_conflict")
    assert _balance(client, session, tenant, program_affiliate_id=cy)["available"] == 3000
    assert [e.data["id"] for e in _events(runtime, EventType.PAYOUT_SUCCEEDED)] == [marked["id"]]
    # An empty body and ``{}`` still mark paid whatever is ready, as before.
    assert expect(client.post(path, session, {}), 200)["amount"] == 3000


def test_the_openapi_document_marks_the_mark_paid_body_optional(client: Client) -> None:
    """The body grew an optional field on a route that took none: an empty body stays valid."""
    document = expect(client.get("/v1/openapi.json"), 200)
    operation = document["paths"]["/v1/ready-payouts/{programAffiliateId}/mark-paid"]["post"]
    assert operation["requestBody"]["required"] is False
    reference = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = document["components"]["schemas"][reference.rsplit("/", 1)[1]]
    assert "amount" not in schema.get("required", [])
    amount = schema["properties"]["amount"]
    assert (amount["type"], amount["minimum"], amount["maximum"]) == ("integer", 1, 2**63 - 1)  # no null
