"""``GET /v1/events/:id`` and ``GET /v1/events`` over HTTP (decisions 11: every resource with an
ID answers ``GET``; docs/webhooks.md, "Reading events back").

A receiver that missed a delivery fetches the event by the ID it holds and must get what the
delivery would have carried: the body is the delivered envelope plus ``"object": "event"``.
Reads are authorised like the delivery records': a key reads its own mode (the other mode's
event is ``409 mode_mismatch``), a session either; another tenant's event is ``404``; an
affiliate key is ``403``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.services.runtime import Runtime
from refcore.services.tenancy import issue_affiliate_key
from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox, memory_runtime
from tests.http.world import Client, Tenant, expect, new_activity, new_tenant
from tests.webhooks.conftest import SECRET_KEY
from tests.webhooks.spies import HeldDeliverer, HeldRequest

URL = "https://hooks.example.com/refcore"


@pytest.fixture
def memory() -> MemoryDatabase:
    return MemoryDatabase()


@pytest.fixture
def runtime(memory: MemoryDatabase, clock: ManualClock) -> Runtime:
    return memory_runtime(clock=clock, database=memory)


@pytest.fixture
def client(runtime: Runtime) -> Client:
    return Client(create_app(runtime, Settings(database_url="memory://", secret_key=SECRET_KEY)))


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "alpha")


@pytest.fixture
def other(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "beta")


@pytest.fixture
def delivered(client: Client, runtime: Runtime, memory: MemoryDatabase, tenant: Tenant) -> list[HeldRequest]:
    """Live and Test activity and a test ping, each event delivered to a receiver that records
    the request: what a receiver got."""
    expect(client.request("PUT", f"/v1/apps/{tenant.app_id}/webhook", tenant.session, json={"url": URL}), 201)
    new_activity(client, tenant, tenant.live_key, "live")
    new_activity(client, tenant, tenant.test_key, "test")
    expect(client.post(f"/v1/apps/{tenant.app_id}/webhook/test", tenant.live_key), 202)
    receiver = HeldDeliverer()
    receiver.open()
    dispatcher = WebhookDispatcher(runtime, MemoryOutbox(memory), SecretBox(SECRET_KEY), receiver)
    asyncio.run(dispatcher.drain())
    assert receiver.requests
    return receiver.requests


def _envelope(request: HeldRequest) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(request.body)
    return body


def _of(delivered: list[HeldRequest], *, livemode: bool, ping: bool = False) -> dict[str, Any]:
    return next(
        body
        for body in map(_envelope, delivered)
        if body["livemode"] is livemode and (body["type"] == "webhook.test") is ping
    )


def _every_page(client: Client, token: str, limit: int, **asked: str) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []
    cursor: dict[str, str] = {}
    while True:
        page = expect(client.get("/v1/events", token, limit=limit, **asked, **cursor), 200)
        assert page["object"] == "list" and len(page["data"]) <= limit
        shown += page["data"]
        if not page["has_more"]:
            return shown
        assert len(page["data"]) == limit
        cursor = {"starting_after": page["data"][-1]["id"]}


# -- the body ----------------------------------------------------------------------------------


def test_an_event_reads_back_as_its_delivery_carried_it(
    client: Client, tenant: Tenant, delivered: list[HeldRequest]
) -> None:
    for request in delivered:
        sent = _envelope(request)
        assert request.event_id == sent["id"]
        key = tenant.live_key if sent["livemode"] else tenant.test_key
        for token in (tenant.session, key):
            assert expect(client.get(f"/v1/events/{sent['id']}", token), 200) == {**sent, "object": "event"}


def test_a_listed_event_is_the_same_object_as_read_by_id(
    client: Client, tenant: Tenant, delivered: list[HeldRequest]
) -> None:
    for shown in expect(client.get("/v1/events", tenant.live_key, limit=100), 200)["data"]:
        assert expect(client.get(f"/v1/events/{shown['id']}", tenant.live_key), 200) == shown


# -- modes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("livemode", [True, False])
def test_a_key_reading_the_other_modes_event_is_a_mode_mismatch_naming_id(
    client: Client, tenant: Tenant, delivered: list[HeldRequest], livemode: bool
) -> None:
    event = _of(delivered, livemode=livemode)
    other_key = tenant.test_key if livemode else tenant.live_key
    error = expect(client.get(f"/v1/events/{event['id']}", other_key), 409, "mode_mismatch")["error"]
    assert error["param"] == "id"


def test_either_modes_key_reads_a_test_ping(
    client: Client, tenant: Tenant, delivered: list[HeldRequest]
) -> None:
    ping = _of(delivered, livemode=False, ping=True)
    for key in (tenant.live_key, tenant.test_key):
        assert expect(client.get(f"/v1/events/{ping['id']}", key), 200)["type"] == "webhook.test"


@pytest.mark.parametrize("mode", ["live", "test"])
def test_lists_never_mix_modes(
    client: Client, tenant: Tenant, delivered: list[HeldRequest], mode: str
) -> None:
    key = tenant.live_key if mode == "live" else tenant.test_key
    by_key = _every_page(client, key, 100)
    by_session = _every_page(client, tenant.session, 100, app_id=tenant.app_id, environment=mode)
    assert by_key == by_session
    assert {(e["livemode"], e["type"] == "webhook.test") for e in by_key} == (
        {(True, False), (False, True)} if mode == "live" else {(False, False), (False, True)}
    )
    sent = {
        e["id"]
        for e in map(_envelope, delivered)
        if e["livemode"] is (mode == "live") or e["type"] == "webhook.test"
    }
    assert sent <= {e["id"] for e in by_key}


def test_a_session_naming_no_mode_lists_live(
    client: Client, tenant: Tenant, delivered: list[HeldRequest]
) -> None:
    assert _every_page(client, tenant.session, 100, app_id=tenant.app_id) == _every_page(
        client, tenant.live_key, 100
    )


def test_a_key_naming_the_other_mode_is_a_mode_mismatch(client: Client, tenant: Tenant) -> None:
    error = expect(client.get("/v1/events", tenant.test_key, environment="live"), 409, "mode_mismatch")[
        "error"
    ]
    assert error["param"] == "environment"


# -- who may read ------------------------------------------------------------------------------


def test_another_tenants_event_is_not_found(
    client: Client, tenant: Tenant, other: Tenant, delivered: list[HeldRequest]
) -> None:
    for event in map(_envelope, delivered):
        for token in (other.session, other.live_key, other.test_key):
            expect(client.get(f"/v1/events/{event['id']}", token), 404, "event_not_found")
    expect(client.get("/v1/events", other.session, app_id=tenant.app_id), 404, "app_not_found")
    expect(client.get("/v1/events", other.live_key, app_id=tenant.app_id), 404, "app_not_found")
    theirs = expect(client.get("/v1/events", other.live_key, limit=100), 200)["data"]
    assert theirs and {e["app_id"] for e in theirs} == {other.app_id}


@pytest.mark.parametrize("event_id", ["whev_nope", "whdl_nope", "nope"])
def test_an_unknown_id_is_not_found(client: Client, tenant: Tenant, event_id: str) -> None:
    for token in (tenant.session, tenant.live_key):
        expect(client.get(f"/v1/events/{event_id}", token), 404, "event_not_found")


def test_an_affiliate_key_is_forbidden(
    client: Client, runtime: Runtime, tenant: Tenant, delivered: list[HeldRequest]
) -> None:
    affiliate_key = runtime.transaction(
        lambda tx: issue_affiliate_key(tx, tenant.app_id, tenant.affiliate_id).secret
    )
    event = _envelope(delivered[0])
    expect(client.get(f"/v1/events/{event['id']}", affiliate_key), 403, "forbidden")
    expect(client.get("/v1/events", affiliate_key), 403, "forbidden")
    expect(client.get("/v1/events", affiliate_key, app_id=tenant.app_id), 403, "forbidden")


def test_no_credential_is_unauthenticated(client: Client) -> None:
    expect(client.get("/v1/events"), 401, "unauthenticated")
    expect(client.get("/v1/events/whev_nope"), 401, "unauthenticated")


# -- the list's parameters ---------------------------------------------------------------------


def test_a_type_filter_keeps_that_type(client: Client, tenant: Tenant, delivered: list[HeldRequest]) -> None:
    shown = _every_page(client, tenant.live_key, 1, type="commission.created")
    assert shown and {e["type"] for e in shown} == {"commission.created"}
    assert {e["livemode"] for e in shown} == {True}
    pings = _every_page(client, tenant.live_key, 100, type="webhook.test")
    assert [e["type"] for e in pings] == ["webhook.test"]


@pytest.mark.parametrize("type", ["payment.created", "", "Commission.Created"])
def test_an_unknown_type_is_a_validation_error(client: Client, tenant: Tenant, type: str) -> None:
    error = expect(client.get("/v1/events", tenant.live_key, type=type), 400, "validation_error")["error"]
    assert error["param"] == "type"


def test_a_session_must_name_the_app(client: Client, tenant: Tenant) -> None:
    error = expect(client.get("/v1/events", tenant.session), 400, "validation_error")["error"]
    assert error["param"] == "app_id"


@pytest.mark.parametrize("limit", ["0", "101", "-1", "ten"])
def test_a_limit_outside_1_to_100_is_refused(client: Client, tenant: Tenant, limit: str) -> None:
    error = expect(client.get("/v1/events", tenant.live_key, limit=limit), 400, "validation_error")["error"]
    assert error["param"] == "limit"


def test_pages_of_one_and_of_a_hundred_show_the_same_events_newest_first(
    client: Client, tenant: Tenant, delivered: list[HeldRequest]
) -> None:
    one_by_one = _every_page(client, tenant.live_key, 1)
    whole = expect(client.get("/v1/events", tenant.live_key, limit=100), 200)
    assert whole["has_more"] is False
    assert one_by_one == whole["data"]
    ids = [e["id"] for e in one_by_one]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
    # The last event as a cursor: an empty page, nothing more.
    last = expect(client.get("/v1/events", tenant.live_key, starting_after=ids[-1]), 200)
    assert (last["data"], last["has_more"]) == ([], False)
    # A page exactly as long as the list says nothing more either.
    exact = expect(client.get("/v1/events", tenant.live_key, limit=len(ids)), 200)
    assert exact["has_more"] is False and len(exact["data"]) == len(ids)
    short = expect(client.get("/v1/events", tenant.live_key, limit=len(ids) - 1), 200)
    assert short["has_more"] is True


def test_a_cursor_from_another_list_is_refused(
    client: Client, tenant: Tenant, other: Tenant, delivered: list[HeldRequest]
) -> None:
    live = _of(delivered, livemode=True)
    assert live["type"] != "payout.failed"
    theirs = expect(client.get("/v1/events", other.live_key, limit=1), 200)["data"][0]
    deliveries = expect(client.get(f"/v1/apps/{tenant.app_id}/webhook/deliveries", tenant.live_key), 200)
    for token, cursor, asked in (
        (tenant.test_key, live["id"], {}),  # the other mode's event
        (tenant.live_key, theirs["id"], {}),  # another tenant's event
        (tenant.live_key, deliveries["data"][0]["id"], {}),  # not an event
        (tenant.live_key, "whev_nope", {}),
        (tenant.live_key, live["id"], {"type": "payout.failed"}),  # an event of another type
    ):
        error = expect(
            client.get("/v1/events", token, starting_after=cursor, **asked), 400, "invalid_starting_after"
        )["error"]
        assert error["param"] == "starting_after"
