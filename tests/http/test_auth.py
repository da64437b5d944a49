"""Authentication and authorization on the wire (interface 5, decisions 1)."""

from __future__ import annotations

import asyncio

from attrs import evolve

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.endpoints import DEVELOPER, Call, Endpoint, Reply, ok, returns
from refcore_http.settings import Settings
from refcore_memstore import memory_runtime
from tests.http.world import Client, expect, key_body, new_tenant
from tests.unit_of_work_log import counted


def test_protected_endpoints_need_a_bearer_credential(client: Client) -> None:
    response = client.get("/v1/organizations")
    expect(response, 401, "unauthenticated")
    assert response.headers["www-authenticate"] == "Bearer"
    for header in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "sess_abc", "Token sess_abc"):
        response = client.request("GET", "/v1/organizations", headers={"Authorization": header})
        expect(response, 401, "unauthenticated")


def test_unknown_credentials_are_unauthenticated(client: Client) -> None:
    for token in ("sess_unknown", "key_app_unknown", "key_test_app_unknown", "nonsense", "x" * 600):
        expect(client.get("/v1/organizations", token), 401, "unauthenticated")


def test_a_revoked_key_stops_working_at_once(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    expect(client.get("/v1/clicks", tenant.live_key), 200)
    keys = expect(client.get("/v1/api-keys", tenant.session, app_id=tenant.app_id), 200)["data"]
    live = next(k for k in keys if k["mode"] == "live")
    revoked = expect(client.delete(f"/v1/api-keys/{live['id']}", tenant.session), 200)
    assert revoked["revoked_at"] is not None and "secret" not in revoked
    expect(client.get("/v1/clicks", tenant.live_key), 401, "unauthenticated")
    expect(client.get("/v1/clicks", tenant.test_key), 200)
    # Revoking again answers the revoked key unchanged.
    assert expect(client.delete(f"/v1/api-keys/{live['id']}", tenant.session), 200) == revoked


def test_each_endpoint_takes_only_its_kinds_of_credential(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    payment = {
        "payment_id": "p",
        "customer_id": "rcus_x",
        "program_id": "prg_x",
        "amount": 1,
        "currency": "usd",
    }
    expect(client.post("/v1/transactions", tenant.session, payment), 403, "forbidden")
    expect(
        client.post("/v1/identify", tenant.session, {"click_id": "clk_x", "email": "a@b.io"}),
        403,
        "forbidden",
    )
    expect(client.post("/v1/organizations", tenant.live_key, {"name": "Mine"}), 403, "forbidden")
    expect(client.post("/v1/api-keys", tenant.live_key, key_body(tenant.app_id, "live")), 403, "forbidden")
    expect(client.get("/v1/api-keys", tenant.live_key, app_id=tenant.app_id), 403, "forbidden")
    # An App key configures its own App.
    assert expect(client.get(f"/v1/apps/{tenant.app_id}", tenant.test_key), 200)["id"] == tenant.app_id
    programs = expect(client.get("/v1/programs", tenant.test_key), 200)["data"]
    assert [p["id"] for p in programs] == [tenant.program_id]


def test_ordinary_keys_cannot_identify_by_promotion_code(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    body = {
        "promotion_code": "ALLY10",
        "program_id": tenant.program_id,
        "program_affiliate_id": tenant.affiliate_id,
        "external_customer_id": "u-1",
    }
    error = expect(client.post("/v1/identify", tenant.live_key, body), 403, "promotion_code_not_allowed")
    assert error["error"]["param"] == "promotion_code"


def test_managed_revenue_keys_identify_by_promotion_code(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    managed = expect(
        client.post("/v1/api-keys", tenant.session, key_body(tenant.app_id, "live", kind="managed_revenue")),
        201,
    )
    assert managed["secret"].startswith("key_managed_")
    body = {
        "promotion_code": "ALLY10",
        "program_id": tenant.program_id,
        "program_affiliate_id": tenant.affiliate_id,
        "external_customer_id": "u-1",
    }
    expect(client.post("/v1/identify", managed["secret"], body), 403, "promotion_code_not_allowed")
    expect(
        client.patch(f"/v1/programs/{tenant.program_id}", tenant.session, {"promotion_code_fallback": True}),
        200,
    )
    who = expect(client.post("/v1/identify", managed["secret"], body), 201)
    assert (who["attribution_source"], who["click_id"], who["attributed"]) == ("promotion_code", None, True)


def test_a_bad_key_on_public_capture_is_refused_not_ignored(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    expect(client.post("/v1/capture", "key_app_forged", {"via": tenant.link_code}), 401, "unauthenticated")
    expect(client.post("/v1/capture", tenant.session, {"via": tenant.link_code}), 403, "forbidden")


def test_public_descriptions_ignore_credentials(client: Client) -> None:
    expect(client.get("/v1", "garbage"), 200)
    expect(client.get("/v1/openapi.json", "key_app_forged"), 200)


def _where_am_i(call: Call) -> Reply:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return ok({"on_event_loop": False})
    return ok({"on_event_loop": True})


def test_handlers_and_services_run_off_the_event_loop(runtime: Runtime, settings: Settings) -> None:
    probe = Endpoint("GET", "/v1/probe", "Where handlers run", _where_am_i, DEVELOPER, returns("Index"))
    client = Client(create_app(runtime, settings, extra=(probe,)))
    tenant = new_tenant(client, runtime, "acme")
    assert expect(client.get("/v1/probe", tenant.session), 200) == {"on_event_loop": False}


def test_a_keyed_get_authenticates_and_reads_in_one_unit_of_work(
    clock: ManualClock, settings: Settings
) -> None:
    """Runtime.shared_read around a GET: one unit of work instead of one for the credential and
    one for the read. Writes keep a read for the credential and a unit of work of their own,
    except a server capture, whose key is authenticated in its batch's unit of work."""
    runtime, reads, writes = counted(memory_runtime(clock=clock))
    client = Client(create_app(runtime, settings))
    tenant = new_tenant(client, runtime, "sharing")
    reads.clear()
    writes.clear()

    expect(client.get("/v1/commissions", tenant.live_key), 200)
    expect(client.get(f"/v1/programs/{tenant.program_id}", tenant.live_key), 200)
    expect(client.get("/v1/programs/prg_missing", tenant.live_key), 404)
    assert reads == ["open", "end"] * 3
    assert writes == []

    reads.clear()
    expect(client.post("/v1/identify", tenant.live_key, {"click_id": "clk_missing", "email": "a@b.io"}), 404)
    assert reads == ["open", "end"]
    assert writes == ["open", "end"]

    reads.clear()
    writes.clear()
    expect(client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code}), 201)
    assert reads == []
    assert writes == ["open", "end"]


def test_a_keyed_write_authenticates_in_its_writes_unit_of_work_where_the_store_allows_it(
    clock: ManualClock, settings: Settings
) -> None:
    """Runtime.read_then_write around every request but a GET: on a store whose reads may join
    its writes (PostgreSQL; here the memory store told so) the credential's lookup and the
    write share one unit of work. A refused key or a refused request commits nothing."""
    runtime, reads, writes = counted(evolve(memory_runtime(clock=clock), reads_join_writes=True))
    client = Client(create_app(runtime, settings))
    tenant = new_tenant(client, runtime, "joining")
    click = expect(client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code}), 201)["click_id"]
    reads.clear()
    writes.clear()

    expect(client.post("/v1/identify", tenant.live_key, {"click_id": click, "email": "a@b.io"}), 201)
    assert reads == []
    assert writes == ["open", "end"]

    writes.clear()
    expect(client.post("/v1/identify", "sk_live_forged", {"click_id": click, "email": "c@d.io"}), 401)
    expect(client.post("/v1/identify", tenant.live_key, {"click_id": "clk_missing", "email": "e@f.io"}), 404)
    assert reads == []
    assert writes == ["open", "end"] * 2
    customers = expect(client.get("/v1/customers", tenant.live_key), 200)["data"]
    assert [customer["email"] for customer in customers] == ["a@b.io"]
