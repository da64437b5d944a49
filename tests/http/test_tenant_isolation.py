"""Another tenant's resources answer 404 as if they did not exist; the other mode's IDs 409.

Every endpoint with an ID in its path is tried, from the endpoint table itself, with another
organization's session and another App's keys (each that the endpoint accepts). A new endpoint
with a path parameter fails :func:`test_every_endpoint_with_an_id_is_covered` until it is added
to :func:`_targets`, so no endpoint can skip this check.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.models import DeliveryStatus, EventType, Mode, WebhookDelivery
from refcore.services.principal import PrincipalKind
from refcore.services.processor_connection import (
    ProcessorKeys,
    claim_pending_install,
    create_connect_link,
    disconnect,
)
from refcore.services.runtime import Runtime, Tx
from refcore.services.tenancy import authenticate, issue_affiliate_key
from refcore.services.webhooks import listed_in
from refcore_http.app import all_endpoints
from refcore_http.endpoints import Endpoint
from refcore_http.settings import MAX_SESSION_TTL_HOURS, Settings
from tests.http.world import Activity, Client, Tenant, expect, new_activity, new_tenant

_HOOK = "https://hooks.alpha.example/refcore"


@dataclass
class World:
    a: Tenant
    b: Tenant
    live: Activity
    test: Activity
    key_id: str
    terms_id: str
    webhook_delivery_id: str
    payouts: Payouts
    agreement_version_id: str
    #: An affiliate key of each tenant's affiliate, by App ID (hosted signups issue these).
    affiliate_keys: dict[str, str]
    processor_connection_id: str
    #: An event (``whev_``) of tenant A's Live activity.
    live_event_id: str


@dataclass
class Payouts:
    """Tenant A's payout objects: an open request and a prepared batch with one execution."""

    request_id: str
    batch_id: str
    execution_id: str


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The world moves the clock a month on (a payout needs its hold to end) and its tenants
    keep using the sessions they began with. Sessions last 30 days by default
    (``REFCORE_SESSION_TTL_HOURS``), so here they get the longest lifetime the setting allows."""
    return evolve(settings, session_ttl_hours=MAX_SESSION_TTL_HOURS)


def _payout_objects(client: Client, runtime: Runtime, clock: ManualClock, a: Tenant) -> Payouts:
    """A payment past its hold, then a payout request (affiliate key) and a batch (session)."""
    click = expect(client.post("/v1/capture", a.live_key, {"via": a.link_code}), 201)
    who = expect(
        client.post("/v1/identify", a.live_key, {"click_id": click["click_id"], "external_customer_id": "p"}),
        201,
    )
    payment = {
        "payment_id": "pay_payout",
        "customer_id": who["customer_id"],
        "program_id": a.program_id,
        "amount": 10000,
        "currency": "usd",
    }
    expect(client.post("/v1/transactions", a.live_key, payment), 201)
    clock.advance(timedelta(days=31))
    affiliate_key = runtime.transaction(lambda tx: issue_affiliate_key(tx, a.app_id, a.affiliate_id).secret)
    request = expect(client.post("/v1/payout-requests", affiliate_key, {"program_id": a.program_id}), 201)
    batch = expect(client.post("/v1/payout-batches", a.session, {"program_id": a.program_id}), 201)
    return Payouts(request["id"], batch["id"], batch["executions"][0]["id"])


def _webhook_delivery(
    runtime: Runtime, app_id: str, event_type: EventType = EventType.WEBHOOK_TEST, *, livemode: bool = False
) -> str:
    """A delivery record of ``app_id`` (deliveries are written by the dispatcher, not by a route)."""

    def work(tx: Tx) -> str:
        event = tx.emit(event_type, app_id=app_id, livemode=livemode, data={"id": "whep_x"})
        delivery = WebhookDelivery(
            id=tx.new_id("whdl"),
            app_id=app_id,
            event_id=event.id,
            event_type=event.type.value,
            status=DeliveryStatus.SUCCEEDED,
            duration_ms=12,
            created_at=tx.now,
            url=_HOOK,
            listed_in_test=listed_in(event, Mode.TEST),
            listed_in_live=listed_in(event, Mode.LIVE),
            http_status=200,
        )
        tx.uow.webhook_deliveries.add(delivery)
        return delivery.id

    return runtime.transaction(work)


def _processor_connection(runtime: Runtime, a: Tenant) -> str:
    """A Test processor connection of ``a``, claimed through the core (no install URL needed) and
    disconnected again, so that ``a`` may still report Test revenue through the API."""
    keys = ProcessorKeys("isolation-tests-server-key-0123456789")
    owner = authenticate(runtime, a.session)
    link = create_connect_link(
        runtime, owner, keys, "https://processor.example/install", app_id=a.app_id, mode="test"
    )
    claimed = claim_pending_install(
        runtime, owner, keys, state=link.state, account_id="acct_1Isolation", webhook_secret="whsec_isolation"
    )
    disconnect(runtime, owner, app_id=a.app_id, mode="test")
    return claimed.connection.id


def _affiliate_key(runtime: Runtime, tenant: Tenant) -> str:
    return runtime.transaction(lambda tx: issue_affiliate_key(tx, tenant.app_id, tenant.affiliate_id).secret)


@pytest.fixture
def world(client: Client, runtime: Runtime, clock: ManualClock) -> World:
    a = new_tenant(client, runtime, "alpha")
    b = new_tenant(client, runtime, "beta")
    live = new_activity(client, a, a.live_key, "live")
    test = new_activity(client, a, a.test_key, "test")
    keys = expect(client.get("/v1/api-keys", a.session, app_id=a.app_id), 200)["data"]
    terms = expect(client.post(f"/v1/programs/{a.program_id}/terms", a.session, {"text": "Be nice"}), 201)
    expect(client.request("PUT", f"/v1/apps/{a.app_id}/webhook", a.session, json={"url": _HOOK}), 201)
    return World(
        a=a,
        b=b,
        live=live,
        test=test,
        key_id=keys[0]["id"],
        terms_id=terms["id"],
        webhook_delivery_id=_webhook_delivery(runtime, a.app_id),
        payouts=_payout_objects(client, runtime, clock, a),
        agreement_version_id=expect(
            client.patch(f"/v1/apps/{a.app_id}/agreement", a.session, {"text": "Be fair"}), 200
        )["current"]["id"],
        affiliate_keys={t.app_id: _affiliate_key(runtime, t) for t in (a, b)},
        processor_connection_id=_processor_connection(runtime, a),
        live_event_id=expect(client.get("/v1/events", a.live_key, limit=1), 200)["data"][0]["id"],
    )


def _targets(w: World, act: Activity) -> dict[str, dict[str, str]]:
    """Tenant A's object for every path with an ID, using activity ``act`` (live or test)."""
    a = w.a
    program = {"id": a.program_id}
    affiliate = {"id": a.affiliate_id}
    return {
        "/v1/organizations/:id": {"id": a.organization_id},
        "/v1/api-keys/:id": {"id": w.key_id},
        "/v1/apps/:id": {"id": a.app_id},
        "/v1/programs/:id": program,
        "/v1/programs/:id/terms": program,
        "/v1/programs/:id/terms/:termsId": {**program, "termsId": w.terms_id},
        "/v1/programs/:id/pause": program,
        "/v1/programs/:id/resume": program,
        "/v1/programs/:id/disable": program,
        "/v1/program-affiliates/:id": affiliate,
        "/v1/program-affiliates/:id/approve": affiliate,
        "/v1/program-affiliates/:id/disable": affiliate,
        "/v1/program-affiliates/:id/enable": affiliate,
        "/v1/program-affiliates/:id/links": affiliate,
        "/v1/program-affiliates/:id/links/:linkId": {**affiliate, "linkId": a.link_id},
        "/v1/clicks/:id": {"id": act.click_id},
        "/v1/customers/:id": {"id": act.customer_id},
        "/v1/referrals/:id": {"id": act.referral_id},
        "/v1/transactions/:id": {"id": act.payment_txn},
        "/v1/transactions/refunds/:id": {"id": act.refund_txn},
        "/v1/transactions/disputes/:id": {"id": act.dispute_dsp},
        "/v1/commissions/:id": {"id": act.commission_id},
        "/v1/apps/:appId/webhook": {"appId": a.app_id},
        "/v1/apps/:appId/webhook/rotate-secret": {"appId": a.app_id},
        "/v1/apps/:appId/webhook/test": {"appId": a.app_id},
        "/v1/apps/:appId/webhook/deliveries": {"appId": a.app_id},
        "/v1/apps/:appId/webhook/deliveries/:deliveryId": {
            "appId": a.app_id,
            "deliveryId": w.webhook_delivery_id,
        },
        "/v1/payout-requests/:id": {"id": w.payouts.request_id},
        "/v1/payout-requests/:id/decline": {"id": w.payouts.request_id},
        "/v1/ready-payouts/:programAffiliateId/mark-paid": {"programAffiliateId": a.affiliate_id},
        "/v1/payout-batches/:id": {"id": w.payouts.batch_id},
        "/v1/payout-batches/:id/dispatch": {"id": w.payouts.batch_id},
        "/v1/payout-batches/:id/cancel": {"id": w.payouts.batch_id},
        "/v1/payout-executions/:id": {"id": w.payouts.execution_id},
        "/v1/payout-executions/:id/succeeded": {"id": w.payouts.execution_id},
        "/v1/payout-executions/:id/failed": {"id": w.payouts.execution_id},
        "/v1/affiliate/programs/:programId/links": {"programId": a.program_id},
        "/v1/affiliate/programs/:programId/links/:linkId": {"programId": a.program_id, "linkId": a.link_id},
        "/v1/apps/:id/agreement": {"id": a.app_id},
        "/v1/apps/:id/agreement/versions/:versionId": {"id": a.app_id, "versionId": w.agreement_version_id},
        "/v1/apps/:id/logo": {"id": a.app_id},
        "/v1/apps/:id/setup-status": {"id": a.app_id},
        "/v1/apps/:id/overview": {"id": a.app_id},
        "/v1/processor/connections/:id": {"id": w.processor_connection_id},
        "/v1/events/:id": {"id": w.live_event_id},
    }


#: A valid payload for the endpoints with an ID that take one.
_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("PATCH", "/v1/apps/:id"): {"name": "Renamed"},
    ("PATCH", "/v1/programs/:id"): {"name": "Renamed"},
    ("POST", "/v1/programs/:id/terms"): {"text": "New terms"},
    ("POST", "/v1/program-affiliates/:id/links"): {"name": "Promo"},
    ("PATCH", "/v1/program-affiliates/:id/links/:linkId"): {"name": "Renamed"},
    ("PUT", "/v1/apps/:appId/webhook"): {"url": "https://attacker.example/hook"},
    ("PATCH", "/v1/apps/:id/agreement"): {"text": "Their agreement"},
    ("POST", "/v1/affiliate/programs/:programId/links"): {"name": "Sneaky"},
}

_ACTIVITY_PATHS = frozenset(
    {
        "/v1/clicks/:id",
        "/v1/customers/:id",
        "/v1/referrals/:id",
        "/v1/transactions/:id",
        "/v1/transactions/refunds/:id",
        "/v1/transactions/disputes/:id",
        "/v1/commissions/:id",
    }
)


def _with_ids() -> list[Endpoint]:
    # Public endpoints (the join page by slug, the public logo) belong to no tenant to cross.
    return [e for e in all_endpoints() if e.path_params and not e.access.ignored]


def _url(endpoint: Endpoint, params: dict[str, str]) -> str:
    path = endpoint.path
    for name in endpoint.path_params:
        path = path.replace(f":{name}", params[name])
    return path


def _other_tenant_credentials(endpoint: Endpoint, b: Tenant, affiliate_key: str | None = None) -> list[str]:
    kinds = endpoint.access.kinds
    credentials = [b.session] if PrincipalKind.SESSION in kinds else []
    if PrincipalKind.APP_KEY in kinds:
        credentials += [b.live_key, b.test_key]
    if PrincipalKind.AFFILIATE_KEY in kinds and affiliate_key is not None:
        credentials.append(affiliate_key)
    return credentials


def test_every_endpoint_with_an_id_is_covered(world: World) -> None:
    missing = [e.path for e in _with_ids() if e.path not in _targets(world, world.live)]
    assert missing == []


@pytest.mark.parametrize("endpoint", _with_ids(), ids=lambda e: f"{e.method} {e.path}")
def test_another_tenants_object_is_not_found(client: Client, world: World, endpoint: Endpoint) -> None:
    url = _url(endpoint, _targets(world, world.live)[endpoint.path])
    body = _BODIES.get((endpoint.method, endpoint.path))
    credentials = _other_tenant_credentials(endpoint, world.b, world.affiliate_keys[world.b.app_id])
    assert credentials, "every endpoint with an ID takes some credential"
    for token in credentials:
        response = client.request(endpoint.method, url, token, json=body)
        error = expect(response, 404)["error"]
        assert error["code"].endswith("not_found"), error
    if endpoint.method == "GET":  # the owner sees it: the 404 above is about tenancy, not the ID
        # Payout instructions go to a Live App key only (decisions 11), not to a session.
        owner = world.a.live_key if endpoint.path == "/v1/payout-executions/:id" else world.a.session
        if endpoint.access.kinds == {PrincipalKind.AFFILIATE_KEY}:  # an affiliate's own links
            owner = world.affiliate_keys[world.a.app_id]
        expect(client.get(url, owner), 200)


def test_another_tenants_attempts_changed_nothing(client: Client, world: World) -> None:
    for endpoint in _with_ids():
        url = _url(endpoint, _targets(world, world.live)[endpoint.path])
        for token in _other_tenant_credentials(endpoint, world.b, world.affiliate_keys[world.b.app_id]):
            client.request(endpoint.method, url, token, json=_BODIES.get((endpoint.method, endpoint.path)))
    a = world.a
    assert expect(client.get(f"/v1/programs/{a.program_id}", a.session), 200)["status"] == "active"
    assert expect(client.get(f"/v1/programs/{a.program_id}", a.session), 200)["name"] == "alpha partners"
    assert (
        expect(client.get(f"/v1/program-affiliates/{a.affiliate_id}", a.session), 200)["status"] == "active"
    )
    link = expect(client.get(f"/v1/program-affiliates/{a.affiliate_id}/links/{a.link_id}", a.session), 200)
    assert link["name"] is None
    assert expect(client.get(f"/v1/api-keys/{world.key_id}", a.session), 200)["revoked_at"] is None
    assert expect(client.get(f"/v1/apps/{a.app_id}", a.session), 200)["name"] == "alpha"
    terms = expect(client.get(f"/v1/programs/{a.program_id}/terms", a.session), 200)
    assert [t["text"] for t in terms["history"]] == ["Be nice"]
    assert expect(client.get(f"/v1/apps/{a.app_id}/webhook", a.session), 200)["url"] == _HOOK


def test_ids_sent_in_bodies_and_queries_of_another_tenant_are_not_found(client: Client, world: World) -> None:
    a, b, act = world.a, world.b, world.live
    session_cases: list[tuple[str, str, dict[str, Any] | None, dict[str, Any] | None]] = [
        ("POST", "/v1/apps", {"organization_id": a.organization_id, "name": "x"}, None),
        ("POST", "/v1/api-keys", {"app_id": a.app_id, "kind": "app", "mode": "live"}, None),
        ("GET", "/v1/api-keys", None, {"app_id": a.app_id}),
        ("GET", "/v1/apps", None, {"organization_id": a.organization_id}),
    ]
    developer_cases: list[tuple[str, str, dict[str, Any] | None, dict[str, Any] | None]] = [
        (
            "POST",
            "/v1/programs",
            {
                "app_id": a.app_id,
                "name": "x",
                "slug": "stolen",
                "currency": "usd",
                "commission": {"type": "fixed", "amount": 1},
            },
            None,
        ),
        ("GET", "/v1/programs", None, {"app_id": a.app_id}),
        ("GET", "/v1/program-affiliates", None, {"program_id": a.program_id}),
        (
            "POST",
            "/v1/program-affiliates",
            {"program_id": a.program_id, "email": "e@x.io", "name": "E"},
            None,
        ),
    ]
    for path in (
        "/v1/clicks",
        "/v1/customers",
        "/v1/referrals",
        "/v1/transactions",
        "/v1/transactions/refunds",
        "/v1/transactions/disputes",
        "/v1/commissions",
        "/v1/events",
    ):
        developer_cases.append(("GET", path, None, {"app_id": a.app_id}))
    filters = {
        "/v1/clicks": {
            "program_id": a.program_id,
            "program_affiliate_id": a.affiliate_id,
            "link_id": a.link_id,
        },
        "/v1/referrals": {
            "customer_id": act.customer_id,
            "click_id": act.click_id,
            "program_id": a.program_id,
        },
        "/v1/transactions": {"customer_id": act.customer_id, "program_affiliate_id": a.affiliate_id},
        "/v1/transactions/refunds": {"transaction_id": act.payment_txn},
        "/v1/transactions/disputes": {"transaction_id": act.payment_txn},
        "/v1/commissions": {"transaction_id": act.payment_txn, "program_affiliate_id": a.affiliate_id},
    }
    key_only_cases = [
        ("GET", path, None, {name: value}) for path, named in filters.items() for name, value in named.items()
    ]
    key_only_cases += [
        ("POST", "/v1/capture", {"via": a.link_code}, None),
        ("POST", "/v1/identify", {"click_id": act.click_id, "external_customer_id": "thief"}, None),
        (
            "POST",
            "/v1/transactions",
            {
                "payment_id": "p",
                "customer_id": act.customer_id,
                "program_id": a.program_id,
                "amount": 1,
                "currency": "usd",
            },
            None,
        ),
        (
            "POST",
            "/v1/transactions/refunds",
            {"refund_id": "r", "payment_id": act.payment_id, "amount": 1},
            None,
        ),
        (
            "POST",
            "/v1/transactions/disputes",
            {"dispute_id": "d", "payment_id": act.payment_id, "status": "opened", "amount": 1},
            None,
        ),
    ]
    attempts = [(b.session, case) for case in session_cases + developer_cases]
    attempts += [(b.live_key, case) for case in developer_cases + key_only_cases]
    for token, (method, path, body, params) in attempts:
        response = client.request(method, path, token, json=body, params=params)
        assert response.status_code == 404, (method, path, body, params, response.text)
        assert response.json()["error"]["code"].endswith("not_found")


def test_lists_show_only_the_callers_own_tenant(client: Client, world: World) -> None:
    b = world.b
    orgs = expect(client.get("/v1/organizations", b.session), 200)["data"]
    assert [o["id"] for o in orgs] == [b.organization_id]
    assert [x["id"] for x in expect(client.get("/v1/apps", b.live_key), 200)["data"]] == [b.app_id]
    for path in ("/v1/clicks", "/v1/customers", "/v1/transactions", "/v1/commissions"):
        assert expect(client.get(path, b.live_key), 200)["data"] == []


def test_an_app_keys_list_of_apps_reads_its_filters_like_any_list(client: Client, world: World) -> None:
    """It had ignored them: another tenant's organization answered 200 with the key's own App."""
    a, b = world.a, world.b
    own = expect(client.get("/v1/apps", b.live_key, organization_id=b.organization_id), 200)
    assert [x["id"] for x in own["data"]] == [b.app_id] and own["has_more"] is False
    for organization in (a.organization_id, "org_00000000000000000000000000"):
        expect(
            client.get("/v1/apps", b.live_key, organization_id=organization), 404, "organization_not_found"
        )
    after_itself = expect(client.get("/v1/apps", b.live_key, starting_after=b.app_id), 200)
    assert after_itself["data"] == [] and after_itself["has_more"] is False
    for cursor in (a.app_id, "app_00000000000000000000000000", b.program_id):
        expect(client.get("/v1/apps", b.live_key, starting_after=cursor), 400, "invalid_starting_after")
    expect(client.get("/v1/apps", b.live_key, limit="0"), 400, "validation_error")


@pytest.mark.parametrize("path", sorted(_ACTIVITY_PATHS))
def test_an_activity_id_of_the_other_mode_is_a_mode_mismatch(client: Client, world: World, path: str) -> None:
    endpoint = next(e for e in all_endpoints() if e.path == path and e.method == "GET")
    live_url = _url(endpoint, _targets(world, world.live)[path])
    test_url = _url(endpoint, _targets(world, world.test)[path])
    # The ID is the path parameter ``id``: the error names it, not the body field of the kind
    # (``click_id``), which the request does not have.
    from_test = expect(client.get(live_url, world.a.test_key), 409, "mode_mismatch")["error"]
    from_live = expect(client.get(test_url, world.a.live_key), 409, "mode_mismatch")["error"]
    assert from_test["param"] == from_live["param"] == "id"
    # The message says which mode the request is in (a key's, never shown), and the record's.
    assert from_test["message"].endswith("belongs to live mode but this request is in test mode")
    assert from_live["message"].endswith("belongs to test mode but this request is in live mode")
    expect(client.get(live_url, world.a.live_key), 200)
    # A session holds no mode: it reads either, by ID.
    assert expect(client.get(test_url, world.a.session), 200)["livemode"] is False


def test_ids_of_the_other_mode_in_bodies_and_filters_are_mode_mismatches(
    client: Client, world: World
) -> None:
    a, live = world.a, world.live
    cases: list[tuple[str, str, dict[str, Any] | None, dict[str, Any] | None, str]] = [
        ("POST", "/v1/identify", {"click_id": live.click_id, "external_customer_id": "x"}, None, "click_id"),
        (
            "POST",
            "/v1/transactions",
            {
                "payment_id": "p",
                "customer_id": live.customer_id,
                "program_id": a.program_id,
                "amount": 1,
                "currency": "usd",
            },
            None,
            "customer_id",
        ),
        ("GET", "/v1/referrals", None, {"customer_id": live.customer_id}, "customer_id"),
        ("GET", "/v1/commissions", None, {"transaction_id": live.payment_txn}, "transaction_id"),
        ("GET", "/v1/clicks", None, {"environment": "live"}, "environment"),
    ]
    for method, path, body, params, param in cases:
        response = client.request(method, path, a.test_key, json=body, params=params)
        assert expect(response, 409, "mode_mismatch")["error"]["param"] == param, (path, response.text)
    # Caller-chosen IDs are looked up in the key's mode only (decisions 11).
    refund = {"refund_id": "r-x", "payment_id": live.payment_id, "amount": 1}
    expect(client.post("/v1/transactions/refunds", a.test_key, refund), 404, "payment_not_found")


def test_a_foreign_id_answers_exactly_like_a_missing_one(client: Client, world: World) -> None:
    b, act = world.b, world.live
    missing = "txn_01kdvdna0000000000000000zz"
    for token in (b.session, b.live_key):
        answers = [
            client.get(f"/v1/transactions/{i}", token) for i in (act.payment_txn, act.refund_txn, missing)
        ]
        codes = {expect(r, 404)["error"]["code"] for r in answers}
        assert codes == {"transaction_not_found"}


#: Events delivered in the deliveries tests, by mode.
_LIVE_EVENTS = (EventType.TRANSACTION_CREATED, EventType.COMMISSION_CREATED, EventType.PAYOUT_READY)
_TEST_EVENTS = (EventType.REFERRAL_CREATED, EventType.TRANSACTION_CREATED)


def _delivery_ids(client: Client, url: str, token: str, **query: str) -> list[str]:
    """Every delivery ID a credential lists, newest first, one record a page (the cursors too)."""
    ids: list[str] = []
    while True:
        page = expect(client.get(url, token, limit="1", **query), 200)
        ids += [d["id"] for d in page["data"]]
        if not page["has_more"]:
            return ids
        query = {**query, "starting_after": ids[-1]}


def test_a_key_lists_only_the_webhook_deliveries_of_its_own_modes_events(
    client: Client, runtime: Runtime
) -> None:
    """Probe J: a Test key listed the deliveries of Live payments and commissions (their event IDs,
    timing and the receiver's answers). A key reads its own mode's; a session names the mode
    (default live), as for activity; the test ping, configuration, is in both."""
    a = new_tenant(client, runtime, "alpha")
    live = [_webhook_delivery(runtime, a.app_id, t, livemode=True) for t in _LIVE_EVENTS]
    test = [_webhook_delivery(runtime, a.app_id, t, livemode=False) for t in _TEST_EVENTS]
    ping = _webhook_delivery(runtime, a.app_id)
    url = f"/v1/apps/{a.app_id}/webhook/deliveries"

    live_history = [ping, *reversed(live)]
    test_history = [ping, *reversed(test)]
    assert _delivery_ids(client, url, a.live_key) == live_history
    assert _delivery_ids(client, url, a.test_key) == test_history
    assert _delivery_ids(client, url, a.test_key, environment="test") == test_history
    assert _delivery_ids(client, url, a.session) == live_history
    assert _delivery_ids(client, url, a.session, environment="test") == test_history
    expect(client.get(url, a.test_key, environment="live"), 409, "mode_mismatch")
    expect(client.get(url, a.test_key, starting_after=live[0]), 400, "invalid_starting_after")


def test_a_webhook_delivery_of_the_other_mode_by_id_is_a_mode_mismatch(
    client: Client, runtime: Runtime
) -> None:
    """As an activity ID of the other mode is; a session, holding no mode, reads either."""
    a = new_tenant(client, runtime, "alpha")
    live = _webhook_delivery(runtime, a.app_id, EventType.TRANSACTION_CREATED, livemode=True)
    test = _webhook_delivery(runtime, a.app_id, EventType.TRANSACTION_CREATED, livemode=False)
    ping = _webhook_delivery(runtime, a.app_id)
    url = f"/v1/apps/{a.app_id}/webhook/deliveries"

    for key, other in ((a.test_key, live), (a.live_key, test)):
        error = expect(client.get(f"{url}/{other}", key), 409, "mode_mismatch")["error"]
        assert error["param"] == "deliveryId"
    for key, own in ((a.test_key, test), (a.live_key, live)):
        assert expect(client.get(f"{url}/{own}", key), 200)["id"] == own
    for token in (a.test_key, a.live_key, a.session):
        expect(client.get(f"{url}/{ping}", token), 200)
    for delivery in (live, test):
        expect(client.get(f"{url}/{delivery}", a.session), 200)
