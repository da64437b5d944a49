"""Every answer of a walk through the API against ``GET /v1/openapi.json``: no undeclared field,
no undeclared status.

The response schemas allow additional properties (more fields are welcome, :mod:`refcore_http.schemas`),
so the property-based test, which validates every response against them, cannot see a field the
server sends but the document forgets: ``Transaction.source``, ``ApiKey.program_affiliate_id``
and the index's ``summary`` were missing, and so was the secret of the webhook ``PUT`` that creates
the endpoint. Here every successful JSON answer of a walk that reaches each response schema is
checked against its operation's schema read closed (a field not among its ``properties`` is
reported), and every status the walk met, errors included, must be declared for its operation.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.services.runtime import Runtime
from refcore.services.tenancy import issue_affiliate_key
from refcore_http.app import create_app
from refcore_http.settings import MAX_SESSION_TTL_HOURS, Settings
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox, memory_runtime
from tests.http.world import JSON, Client, Tenant, expect, new_activity, new_tenant
from tests.processor.world import CONNECT_URL, connect_link, deliver, new_installation
from tests.selfservice.images import png
from tests.selfservice.world import join, sign_up
from tests.webhooks.spies import RecordingBackend

SECRET_KEY = "openapi-responses-server-key-0123456789"


@dataclass
class Seen:
    method: str
    path: str
    status: int
    body: Any


class Recorder(Client):
    """A client that keeps every answer, for checking against the document afterwards."""

    def __init__(self, app: Starlette) -> None:
        super().__init__(app)
        self.seen: list[Seen] = []

    def request(self, method: str, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
        response = super().request(method, path, token, **kw)
        is_json = response.headers.get("content-type", "").startswith("application/json")
        body = response.json() if is_json and response.content else None
        self.seen.append(Seen(method, path.partition("?")[0], response.status_code, body))
        return response


# -- reading the document -----------------------------------------------------------------------


def _template(document: JSON, path: str) -> str:
    """The document's path for a concrete one: a literal path wins over a parameter (as in routing)."""
    matching = [
        template
        for template in document["paths"]
        if re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", template), path)
    ]
    assert matching, f"no operation in the document for {path}"
    return min(matching, key=lambda template: template.count("{"))


def _operation(document: JSON, seen: Seen) -> JSON:
    operation: JSON = document["paths"][_template(document, seen.path)][seen.method.lower()]
    return operation


def _resolve(document: JSON, schema: JSON) -> JSON:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "null": type(None),
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
}


def _fits(document: JSON, value: Any, schema: JSON) -> bool:
    """Whether ``value`` is of the JSON type ``schema`` names (any, when it names none)."""
    expected = _resolve(document, schema).get("type")
    if expected is None:
        return True
    if isinstance(value, bool) and expected == "integer":
        return False
    return isinstance(value, _JSON_TYPES[expected])


def undeclared(document: JSON, value: Any, schema: JSON, at: str = "") -> list[str]:
    """Where ``value`` has a property that ``schema`` does not name, as ``.a.b[0].c`` paths.

    Only objects whose schema lists ``properties`` are closed: ``{"type": "object"}`` (an event's
    ``data``, the document's ``paths``) takes anything. Of the ``anyOf`` / ``oneOf`` branches of
    the value's type, the one that fits best is reported (a payment read as a ``Transaction``,
    not as a ``Refund``; an object under ``nullable`` is never passed as the ``null``)."""
    schema = _resolve(document, schema)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        found = [undeclared(document, value, b, at) for b in branches if _fits(document, value, b)]
        return min(found, key=len, default=[])
    if isinstance(value, dict) and "properties" in schema:
        properties = schema["properties"]
        problems = [f"{at}.{name}" for name in value if name not in properties]
        for name, inner in value.items():
            if name in properties:
                problems += undeclared(document, inner, properties[name], f"{at}.{name}")
        return problems
    if isinstance(value, list) and "items" in schema:
        return [
            p
            for i, item in enumerate(value)
            for p in undeclared(document, item, schema["items"], f"{at}[{i}]")
        ]
    return []


def _response_schema(operation: JSON, status: int) -> JSON | None:
    content = operation["responses"][str(status)].get("content", {})
    schema: JSON | None = content.get("application/json", {}).get("schema")
    return schema


def _schema_name(schema: JSON) -> str:
    """``Transaction`` of ``$ref`` to it, ``Transaction[]`` of a list envelope of them."""
    if "$ref" in schema:
        return str(schema["$ref"].rsplit("/", 1)[1])
    return _schema_name(schema["properties"]["data"]["items"]) + "[]"


def _success_schemas(document: JSON) -> set[str]:
    return {
        _schema_name(schema)
        for item in document["paths"].values()
        for operation in item.values()
        for status in operation["responses"]
        if status.startswith("2")
        if (schema := _response_schema(operation, int(status))) is not None
    }


# -- the walk -----------------------------------------------------------------------------------


@dataclass
class Walk:
    client: Recorder
    runtime: Runtime
    database: MemoryDatabase
    clock: ManualClock
    mail_dir: Path
    tenant: Tenant
    #: A Live click, for reading with the Test key (``mode_mismatch``).
    live_click: str = ""


def _tenancy_and_programs(w: Walk) -> None:
    c, t, session = w.client, w.tenant, w.tenant.session
    expect(c.get("/v1"), 200)
    expect(c.get("/v1/openapi.json"), 200)
    expect(c.get("/v1/health"), 200)
    expect(c.get("/v1/organizations", session), 200)
    expect(c.get(f"/v1/organizations/{t.organization_id}", session), 200)
    expect(c.get("/v1/apps", session), 200)
    expect(c.get(f"/v1/apps/{t.app_id}", session), 200)
    expect(c.patch(f"/v1/apps/{t.app_id}", session, {"name": "Walk"}), 200)
    keys = expect(c.get("/v1/api-keys", session, app_id=t.app_id), 200)["data"]
    expect(c.get(f"/v1/api-keys/{keys[0]['id']}", session), 200)
    spare = expect(c.post("/v1/api-keys", session, {"app_id": t.app_id, "kind": "app", "mode": "test"}), 201)
    expect(c.delete(f"/v1/api-keys/{spare['id']}", session), 200)
    program = f"/v1/programs/{t.program_id}"
    expect(c.get("/v1/programs", session, app_id=t.app_id), 200)
    expect(c.get(program, session), 200)
    expect(c.patch(program, session, {"name": "Walkers"}), 200)
    terms = expect(c.post(f"{program}/terms", session, {"text": "Be nice."}), 201)
    expect(c.get(f"{program}/terms", session), 200)
    expect(c.get(f"{program}/terms/{terms['id']}", session), 200)
    expect(c.post(f"{program}/pause", session), 200)
    expect(c.post(f"{program}/resume", session), 200)


def _affiliates(w: Walk) -> None:
    c, t, session = w.client, w.tenant, w.tenant.session
    other = expect(
        c.post(
            "/v1/program-affiliates",
            session,
            {"program_id": t.program_id, "email": "bo@walk.example", "name": "Bo"},
        ),
        201,
    )
    affiliate = f"/v1/program-affiliates/{other['id']}"
    expect(c.get("/v1/program-affiliates", session, program_id=t.program_id), 200)
    expect(c.get(affiliate, session), 200)
    expect(c.post(f"{affiliate}/disable", session), 200)
    expect(c.post(f"{affiliate}/enable", session), 200)
    link = expect(c.post(f"{affiliate}/links", session, {"name": "Blog"}), 201)
    expect(c.get(f"{affiliate}/links", session), 200)
    expect(c.get(f"{affiliate}/links/{link['id']}", session), 200)
    expect(c.patch(f"{affiliate}/links/{link['id']}", session, {"name": "Blog 2"}), 200)
    expect(c.delete(f"{affiliate}/links/{link['id']}", session), 200)


def _activity(w: Walk) -> None:
    c, t, key = w.client, w.tenant, w.tenant.live_key
    act = new_activity(c, t, key, "walk")
    w.live_click = act.click_id
    expect(c.post("/v1/identify", key, {"click_id": act.click_id, "external_customer_id": "user-walk"}), 200)
    payment = {
        "payment_id": act.payment_id,
        "customer_id": act.customer_id,
        "program_id": t.program_id,
        "amount": 10000,
        "currency": "usd",
    }
    expect(c.post("/v1/transactions", key, payment), 200)  # an exact replay
    refund = {"refund_id": act.refund_id, "payment_id": act.payment_id, "amount": 1000}
    expect(c.post("/v1/transactions/refunds", key, refund), 200)
    dispute = {"dispute_id": act.dispute_id, "payment_id": act.payment_id, "status": "won", "amount": 1000}
    expect(c.post("/v1/transactions/disputes", key, dispute), 200)
    for path, object_id in (
        ("/v1/clicks", act.click_id),
        ("/v1/customers", act.customer_id),
        ("/v1/referrals", act.referral_id),
        ("/v1/transactions", act.payment_txn),
        ("/v1/transactions", act.refund_txn),
        ("/v1/transactions/refunds", act.refund_txn),
        ("/v1/transactions/disputes", act.dispute_dsp),
        ("/v1/commissions", act.commission_id),
    ):
        expect(c.get(path, key), 200)
        expect(c.get(f"{path}/{object_id}", key), 200)
    expect(c.request("OPTIONS", "/v1/capture", headers={"Origin": "https://shop.example"}), 204)
    expect(c.get(f"/v1/apps/{t.app_id}/setup-status", key), 200)
    expect(c.get(f"/v1/apps/{t.app_id}/overview", key), 200)


def _webhooks(w: Walk) -> None:
    c, t, session = w.client, w.tenant, w.tenant.session
    hook = f"/v1/apps/{t.app_id}/webhook"
    expect(c.request("PUT", hook, session, json={"url": "https://hooks.example.com/in"}), 201)
    expect(c.request("PUT", hook, session, json={"url": "https://hooks.example.com/in2"}), 200)
    expect(c.get(hook, session), 200)
    expect(c.post(f"{hook}/rotate-secret", session), 200)
    expect(c.post(f"{hook}/test", session), 202)
    deliverer = Deliverer(allow_private_networks=True, network_backend=RecordingBackend())
    dispatcher = WebhookDispatcher(w.runtime, MemoryOutbox(w.database), SecretBox(SECRET_KEY), deliverer)
    asyncio.run(dispatcher.drain())
    deliveries = expect(c.get(f"{hook}/deliveries", session), 200)["data"]
    expect(c.get(f"{hook}/deliveries/{deliveries[0]['id']}", session), 200)
    listed = expect(c.get("/v1/events", session, app_id=t.app_id, environment="test"), 200)["data"]
    expect(c.get(f"/v1/events/{listed[0]['id']}", session), 200)
    expect(c.delete(hook, session), 200)


def _app_profile(w: Walk) -> None:
    c, t, session = w.client, w.tenant, w.tenant.session
    app = f"/v1/apps/{t.app_id}"
    expect(c.patch(f"{app}/agreement", session, {"text": "Agreement one"}), 200)
    agreement = expect(c.get(f"{app}/agreement", session), 200)
    expect(c.get(f"{app}/agreement/versions/{agreement['current']['id']}", session), 200)
    logo = expect(
        c.request("POST", f"{app}/logo", session, content=png(), headers={"Content-Type": "image/png"}), 200
    )
    assert c.get(logo["url"]).status_code == 200
    etag = f'"{logo["sha256"]}"'
    assert c.request("GET", logo["url"], headers={"If-None-Match": etag}).status_code == 304
    expect(c.delete(f"{app}/logo", session), 200)


def _join_and_affiliate_side(w: Walk) -> None:
    c, t = w.client, w.tenant
    slug = "walk-partners"
    expect(c.get(f"/v1/join/{slug}"), 200)
    joined = join(c, w.mail_dir, slug, "joiner@walk.example")
    key = joined["api_key"]["secret"]
    links = f"/v1/affiliate/programs/{t.program_id}/links"
    link = expect(c.post(links, key, {"name": "Newsletter"}), 201)
    expect(c.get(links, key), 200)
    expect(c.get(f"{links}/{link['id']}", key), 200)
    expect(c.delete(f"{links}/{link['id']}", key), 200)
    for _ in range(5):  # the per-address limit of the settings below
        sign_up(c, w.mail_dir, slug, "eager@walk.example")
    expect(c.post(f"/v1/join/{slug}", json={"email": "eager@walk.example", "name": "E"}), 429)


def _payouts(w: Walk) -> None:
    c, t, session, live = w.client, w.tenant, w.tenant.session, w.tenant.live_key
    ally_key = w.runtime.transaction(lambda tx: issue_affiliate_key(tx, t.app_id, t.affiliate_id).secret)
    program = {"program_id": t.program_id}
    w.clock.advance(timedelta(days=31))
    expect(c.get("/v1/payout-balance", ally_key, **program), 200)
    details = {"method": "paypal", "email": "ally@paypal.example"}
    expect(c.request("PUT", "/v1/payout-details", ally_key, json=details, params=program), 200)
    expect(c.get("/v1/payout-details", ally_key, **program), 200)
    request = expect(c.post("/v1/payout-requests", ally_key, program), 201)
    expect(c.get("/v1/payout-requests", ally_key, **program), 200)
    expect(c.get(f"/v1/payout-requests/{request['id']}", ally_key), 200)
    expect(c.post(f"/v1/payout-requests/{request['id']}/decline", session), 200)
    expect(c.get("/v1/ready-payouts", session, **program), 200)
    mistaken = expect(c.post("/v1/payout-batches", session, program), 201)
    expect(c.post(f"/v1/payout-batches/{mistaken['id']}/cancel", session), 200)
    batch = expect(c.post("/v1/payout-batches", session, program), 201)
    expect(c.get("/v1/payout-batches", session, **program), 200)
    expect(c.get(f"/v1/payout-batches/{batch['id']}", session), 200)
    dispatched = expect(c.post(f"/v1/payout-batches/{batch['id']}/dispatch", session), 200)
    execution = f"/v1/payout-executions/{dispatched['executions'][0]['id']}"
    expect(c.get(execution, live), 200)
    expect(c.post(f"{execution}/succeeded", live, headers={"Idempotency-Key": "walk-1"}), 200)


def _processor(w: Walk) -> None:
    c, t, session = w.client, w.tenant, w.tenant.session
    installation = new_installation()
    link = connect_link(c, session, app_id=t.app_id, mode="test")
    claim = {
        "state": link["state"],
        "account_id": installation.account,
        "webhook_secret": installation.secret,
    }
    connection = expect(c.post("/v1/processor/claim-pending-install", session, claim), 201)
    expect(c.get("/v1/processor/connections", session, app_id=t.app_id), 200)
    expect(c.get(f"/v1/processor/connections/{connection['id']}", session), 200)
    # A type refcore does not map is answered too, as not handled.
    customer = {"id": "cus_1", "object": "customer"}
    expect(deliver(c, installation, "customer.created", customer, at=w.clock.now()), 200)
    expect(c.post("/v1/processor/disconnect", session, {"app_id": t.app_id, "mode": "test"}), 200)


def _sign_out(w: Walk) -> None:
    expect(w.client.delete("/v1/session", w.tenant.session), 200)


def _refusals(w: Walk) -> None:
    """Error answers every operation may give, so that their statuses are checked too."""
    c, t = w.client, w.tenant
    expect(c.get("/v1/clicks/clk_00000000000000000000000000", t.live_key), 404)
    expect(c.post("/v1/transactions", t.live_key, {"amount": "x"}), 400)
    expect(c.get("/v1/organizations", t.live_key), 403)
    expect(c.get("/v1/clicks", "key_app_unknown"), 401)
    expect(c.get("/v1/clicks", t.live_key, environment="test"), 409)
    expect(c.get(f"/v1/clicks/{w.live_click}", t.test_key), 409)
    expect(c.patch("/v1/clicks", t.live_key, {}), 405)


STEPS = (
    _tenancy_and_programs,
    _affiliates,
    _activity,
    _webhooks,
    _app_profile,
    _join_and_affiliate_side,
    _payouts,
    _processor,
    _refusals,
    _sign_out,
)


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[JSON, list[Seen]]]:
    clock = ManualClock()
    database = MemoryDatabase()
    runtime = memory_runtime(clock=clock, database=database)
    mail_dir = Path(tmp_path_factory.mktemp("mail"))
    settings = Settings(
        database_url="memory://",
        secret_key=SECRET_KEY,
        mailer=f"file:{mail_dir}",
        processor_connect_url=CONNECT_URL,
        session_ttl_hours=MAX_SESSION_TTL_HOURS,  # the payouts wait out a month's hold
        join_limit_per_email=5,
    )
    client = Recorder(create_app(runtime, settings))
    tenant = new_tenant(client, runtime, "walk", hold_days=30)
    walk = Walk(client, runtime, database, clock, mail_dir, tenant)
    for step in STEPS:
        step(walk)
    yield expect(client.get("/v1/openapi.json"), 200), client.seen


def test_every_answer_names_only_the_properties_its_schema_declares(walked: tuple[JSON, list[Seen]]) -> None:
    document, seen = walked
    problems = []
    for answer in seen:
        if not 200 <= answer.status < 300 or answer.body is None:
            continue
        schema = _response_schema(_operation(document, answer), answer.status)
        assert schema is not None, (answer.method, answer.path, answer.status)
        for where in undeclared(document, answer.body, schema):
            problems.append(f"{answer.method} {answer.path} {answer.status}: {_schema_name(schema)}{where}")
    assert problems == []


def test_the_walk_reaches_every_response_schema(walked: tuple[JSON, list[Seen]]) -> None:
    """So that a schema added later is checked too (or this walk learns to reach it)."""
    document, seen = walked
    reached = {
        _schema_name(schema)
        for answer in seen
        if 200 <= answer.status < 300
        if (schema := _response_schema(_operation(document, answer), answer.status)) is not None
    }
    assert _success_schemas(document) - reached == set()


def test_every_status_the_walk_met_is_declared_for_its_operation(walked: tuple[JSON, list[Seen]]) -> None:
    """Not only through ``default``: a client generated from the document knows ``304`` and ``429``.

    A method the path does not have is no operation: its ``405`` is the shared response."""
    document, seen = walked
    missing = set()
    for answer in seen:
        item = document["paths"][_template(document, answer.path)]
        if answer.method.lower() not in item:
            assert answer.status == 405, (answer.method, answer.path)
            assert set(document["components"]["responses"]) == {"MethodNotAllowed"}
        elif str(answer.status) not in item[answer.method.lower()]["responses"]:
            missing.add((answer.method, _template(document, answer.path), answer.status))
    assert missing == set()


def test_statuses_the_walk_cannot_show_are_declared_too(walked: tuple[JSON, list[Seen]]) -> None:
    document = walked[0]
    operations = [op for item in document["paths"].values() for op in item.values()]
    assert all("500" in op["responses"] for op in operations)
    join = document["paths"]["/v1/join/{programSlug}"]["post"]["responses"]["429"]
    assert join["headers"]["Retry-After"]["schema"] == {"type": "integer"}
    assert "content" not in document["paths"]["/v1/apps/{id}/logo"]["get"]["responses"]["304"]
    put = document["paths"]["/v1/apps/{appId}/webhook"]["put"]["responses"]
    assert _schema_name(put["201"]["content"]["application/json"]["schema"]) == "WebhookEndpointWithSecret"
    assert _schema_name(put["200"]["content"]["application/json"]["schema"]) == "WebhookEndpoint"
    assert document["components"]["responses"]["MethodNotAllowed"]["headers"]["Allow"]


def test_the_check_sees_a_field_under_a_nullable_a_list_and_a_choice() -> None:
    document: JSON = {"components": {"schemas": {"Terms": {"type": "object", "properties": {"id": {}}}}}}
    terms = {"$ref": "#/components/schemas/Terms"}
    schema = {
        "type": "object",
        "properties": {
            "current": {"anyOf": [terms, {"type": "null"}]},
            "history": {"type": "array", "items": terms},
        },
    }
    value = {"current": {"id": "a", "text": "x"}, "history": [{"id": "b"}, {"id": "c", "extra": 1}], "new": 2}
    assert undeclared(document, value, schema) == [".new", ".current.text", ".history[1].extra"]
    assert undeclared(document, {"current": None, "history": []}, schema) == []
