"""The endpoints of interface 4.6 over HTTP, and the dispatcher running in the server's lifespan."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from attrs import evolve
from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning

from refcore.clocks import ManualClock
from refcore_http import cli
from refcore_http.app import create_app
from refcore_http.settings import Settings, SettingsError
from refcore_http.webhooks import keys
from refcore_memstore import MemoryDatabase, MemoryOutbox, memory_runtime
from tests.http.world import Client, Tenant, expect, key_body, new_tenant
from tests.webhooks.conftest import SECRET_KEY
from tests.webhooks.pki import Pki
from tests.webhooks.receiver import Receiver

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

URL = "https://hooks.example.com/refcore"


@pytest.fixture
def memory() -> MemoryDatabase:
    return MemoryDatabase()


@pytest.fixture
def client(memory: MemoryDatabase, clock: ManualClock) -> Client:
    runtime = memory_runtime(clock=clock, database=memory)
    return Client(create_app(runtime, Settings(database_url="memory://", secret_key=SECRET_KEY)))


@pytest.fixture
def tenant(client: Client, memory: MemoryDatabase, clock: ManualClock) -> Tenant:
    return new_tenant(client, memory_runtime(clock=clock, database=memory), "alpha")


def _hook(tenant: Tenant, tail: str = "") -> str:
    return f"/v1/apps/{tenant.app_id}/webhook{tail}"


def test_put_creates_with_the_secret_once_then_replaces_without_it(client: Client, tenant: Tenant) -> None:
    created = expect(client.request("PUT", _hook(tenant), tenant.session, json={"url": URL}), 201)
    replaced = expect(
        client.request(
            "PUT",
            _hook(tenant),
            tenant.live_key,
            json={"url": URL, "events": ["payout.ready"], "disabled": True},
        ),
        200,
    )
    shown = expect(client.get(_hook(tenant), tenant.session), 200)

    assert created["object"] == "webhook_endpoint"
    assert created["secret"].startswith("whsec_")
    assert "secret" not in replaced and "secret" not in shown
    assert shown["events"] == ["payout.ready"] and shown["disabled"] is True
    assert created["secret"] not in client.get(_hook(tenant), tenant.session).text


def test_answers_revealing_a_secret_are_never_stored_by_caches(client: Client, tenant: Tenant) -> None:
    """The signing secret is kept only sealed; a proxy's or a browser's cache must not keep the one
    answer that shows it (``Cache-Control: no-store``, probe AJ). Answers without it need not say so."""
    created = client.request("PUT", _hook(tenant), tenant.session, json={"url": URL})
    replaced = client.request("PUT", _hook(tenant), tenant.session, json={"url": URL, "disabled": True})
    rotated = client.post(_hook(tenant, "/rotate-secret"), tenant.session)
    key = client.post("/v1/api-keys", tenant.session, key_body(tenant.app_id, "test"))

    for response in (created, rotated, key):
        assert response.status_code in (200, 201) and "secret" in response.json()
        assert response.headers["cache-control"] == "no-store"
    assert replaced.status_code == 200 and "cache-control" not in replaced.headers


def test_http_urls_and_bad_fields_are_validation_errors_naming_the_field(
    client: Client, tenant: Tenant
) -> None:
    for body, param in (
        ({"url": "http://hooks.example.com/x"}, "url"),
        ({"url": URL, "events": ["webhook.test"]}, "events"),
        ({"url": URL, "events": [1]}, "events"),
        ({"url": URL, "events": "affiliate.created"}, "events"),
        ({"url": URL, "events": {"affiliate.created": True}}, "events"),
        ({"url": URL, "disabled": "no"}, "disabled"),
        ({"url": URL, "secret": "whsec_chosen"}, "secret"),
        ({}, "url"),
    ):
        error = expect(client.request("PUT", _hook(tenant), tenant.session, json=body), 400)["error"]
        assert (error["code"], error.get("param")) == ("validation_error", param), (body, error)
    expect(client.get(_hook(tenant), tenant.session), 404, "webhook_endpoint_not_found")


def test_put_refuses_urls_no_delivery_can_reach_and_keeps_accepting_deliverable_ones(
    client: Client, tenant: Tenant
) -> None:
    """These were accepted, then failed every attempt: httpx refuses non-canonical IPv4 and
    invalid IDNA, the resolver's IDNA codec refuses empty and over-long labels, ``xn--`` is no
    A-label, a percent sign in the host is looked up as it stands, and TLS verification fails
    on a numeric spelling of an address (the certificate is checked against ``127.1``)."""
    for url in (
        "https://2130706433:8632/",
        "https://0x7f000001:8632/",
        "https://127.1:8632/",
        "https://0177.0.0.1/",
        "https://127.000.000.001/",
        "https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/",
        "https://a..b/",
        "https://xn--/",
        "https://" + "a" * 300 + ".com/",
        "https://evil.com%40localhost/",
    ):
        error = expect(client.request("PUT", _hook(tenant), tenant.session, json={"url": url}), 400)["error"]
        assert (error["code"], error.get("param")) == ("validation_error", "url"), (url, error)
    expect(client.get(_hook(tenant), tenant.session), 404, "webhook_endpoint_not_found")
    for url in (
        "https://bücher.example/hook",
        "https://127.0.0.1:8632/",
        "https://hooks1.example.com/",
        "https://[::1]:8443/x",
        URL,
    ):
        answer = client.request("PUT", _hook(tenant), tenant.session, json={"url": url})
        assert answer.status_code in (200, 201), (url, answer.text)
        assert answer.json()["url"] == url


def test_rotate_test_and_delete(client: Client, tenant: Tenant) -> None:
    created = expect(client.request("PUT", _hook(tenant), tenant.session, json={"url": URL}), 201)

    rotated = expect(client.post(_hook(tenant, "/rotate-secret"), tenant.session), 200)
    queued = expect(client.post(_hook(tenant, "/test"), tenant.session, json={}), 202)
    removed = expect(client.delete(_hook(tenant), tenant.session), 200)

    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != created["secret"]
    assert (queued["object"], queued["type"], queued["livemode"]) == ("event", "webhook.test", False)
    assert queued["id"].startswith("whev_") and queued["data"]["id"] == created["id"]
    assert removed["deleted"] is True and "secret" not in removed
    expect(client.get(_hook(tenant), tenant.session), 404, "webhook_endpoint_not_found")
    expect(client.post(_hook(tenant, "/test"), tenant.session), 404, "webhook_endpoint_not_found")
    expect(
        client.post(_hook(tenant, "/rotate-secret"), tenant.session, json={"x": 1}), 400, "validation_error"
    )


def test_deliveries_list_is_paginated_and_validates_its_query(client: Client, tenant: Tenant) -> None:
    listed = expect(client.get(_hook(tenant, "/deliveries"), tenant.session), 200)
    assert listed == {"object": "list", "data": [], "has_more": False}
    expect(client.get(_hook(tenant, "/deliveries"), tenant.session, limit=0), 400, "validation_error")
    expect(
        client.get(_hook(tenant, "/deliveries"), tenant.session, starting_after="whdl_nope"),
        400,
        "invalid_starting_after",
    )
    expect(
        client.get(_hook(tenant, "/deliveries/whdl_nope"), tenant.session), 404, "webhook_delivery_not_found"
    )


def test_the_index_and_openapi_list_the_webhook_endpoints(client: Client) -> None:
    index = expect(client.get("/v1"), 200)
    listed = {(e["method"], e["path"]) for e in index["endpoints"]}
    assert {
        ("GET", "/v1/apps/:appId/webhook"),
        ("PUT", "/v1/apps/:appId/webhook"),
        ("DELETE", "/v1/apps/:appId/webhook"),
        ("POST", "/v1/apps/:appId/webhook/rotate-secret"),
        ("POST", "/v1/apps/:appId/webhook/test"),
        ("GET", "/v1/apps/:appId/webhook/deliveries"),
    } <= listed
    document = expect(client.get("/v1/openapi.json"), 200)
    schemas = document["components"]["schemas"]
    assert {"WebhookEndpoint", "WebhookDelivery", "Event"} <= set(schemas)
    put = document["paths"]["/v1/apps/{appId}/webhook"]["put"]
    assert set(put["responses"]) >= {"200", "201"}


# -- the running server ------------------------------------------------------------------------


@pytest.fixture
def served(
    monkeypatch: pytest.MonkeyPatch, pki: Pki, memory: MemoryDatabase, clock: ManualClock
) -> Iterator[tuple[Starlette, TestClient]]:
    """A server app with its lifespan (the dispatcher), configured from the environment."""
    monkeypatch.setenv("REFCORE_WEBHOOK_CA_BUNDLE", str(pki.ca_path))
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true")
    monkeypatch.setenv("REFCORE_SECRET_KEY", SECRET_KEY)
    settings = Settings.from_env(database_url="memory://")
    runtime = memory_runtime(clock=clock, database=memory)
    app = create_app(runtime, settings, outbox=MemoryOutbox(memory))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        with TestClient(app) as http:
            yield app, http


def _call(http: TestClient, method: str, path: str, token: str, body: Any = None) -> httpx.Response:
    return http.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})


def _wait_for_deliveries(http: TestClient, tenant: Tenant, count: int) -> list[dict[str, Any]]:
    for _ in range(1000):
        data: list[dict[str, Any]] = _call(http, "GET", _hook(tenant, "/deliveries"), tenant.session).json()[
            "data"
        ]
        if len(data) >= count:
            return data
        time.sleep(0.01)
    raise AssertionError(f"fewer than {count} deliveries were recorded")


def test_the_server_delivers_committed_events_to_a_verifying_receiver(
    served: tuple[Starlette, TestClient], receiver: Receiver, memory: MemoryDatabase, clock: ManualClock
) -> None:
    app, http = served
    tenant = new_tenant(Client(app), memory_runtime(clock=clock, database=memory), "beta")
    clock.advance(timedelta(seconds=1))  # the set-up's events predate the endpoint: not sent
    created = _call(http, "PUT", _hook(tenant), tenant.session, {"url": receiver.url("/ok")}).json()
    receiver.secret = created["secret"]

    assert _call(http, "POST", _hook(tenant, "/test"), tenant.session).status_code == 202
    invited = {"program_id": tenant.program_id, "email": "new@beta.example", "name": "New"}
    assert _call(http, "POST", "/v1/program-affiliates", tenant.session, invited).status_code == 201

    records = _wait_for_deliveries(http, tenant, 2)
    assert {(r["event_type"], r["status"], r["http_status"]) for r in records} == {
        ("webhook.test", "succeeded", 200),
        ("affiliate.created", "succeeded", 200),
    }
    assert [h.problems for h in receiver.received] == [[], []]


# -- the server key -----------------------------------------------------------------------------


def test_a_server_on_a_public_interface_with_a_database_refuses_to_start_without_the_key(
    memory: MemoryDatabase,
) -> None:
    runtime = memory_runtime(database=memory)
    with pytest.raises(SettingsError) as refused:
        create_app(runtime, Settings(database_url="sqlite:///refcore.db", host="0.0.0.0"))
    assert "REFCORE_SECRET_KEY" in str(refused.value)
    create_app(runtime, Settings(database_url="sqlite:///refcore.db", host="0.0.0.0", secret_key=SECRET_KEY))


def test_without_the_key_a_loopback_server_warns_loudly_and_prints_no_key(
    monkeypatch: pytest.MonkeyPatch, memory: MemoryDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(keys, "_warned", False)

    create_app(memory_runtime(database=memory), Settings(database_url="sqlite:///refcore.db"))

    err = capsys.readouterr().err
    assert "WARNING: REFCORE_SECRET_KEY is not set" in err
    assert keys.DEVELOPMENT_SECRET_KEY not in err


def test_refcore_serve_refuses_a_public_interface_without_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.append(app))
    monkeypatch.delenv("REFCORE_SECRET_KEY", raising=False)
    database = f"sqlite:///{tmp_path / 'refcore.db'}"

    status = cli.main(["serve", "--database-url", database, "--host", "0.0.0.0"])

    assert status == 2
    assert started == []
    assert "REFCORE_SECRET_KEY is required" in capsys.readouterr().err


def test_a_refused_start_leaves_the_database_as_it_was(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Probe M: the key was checked after migrating and after --print-session had issued a
    session; in a fleet a mis-set release migrated the shared database before refusing."""
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("the server must not start"))
    monkeypatch.delenv("REFCORE_SECRET_KEY", raising=False)
    path = tmp_path / "refcore.db"
    argv = [
        "serve",
        "--database-url",
        f"sqlite:///{path}",
        "--host",
        "0.0.0.0",
        "--print-session",
        "a@b.example",
    ]

    assert cli.main(argv) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and "REFCORE_SECRET_KEY is required" in printed.err
    assert not path.exists()


@pytest.mark.parametrize(
    "url", ["postgresql://postgres@127.0.0.1:5432/none", "postgresql+psycopg://h/db", "postgres://h/db"]
)
def test_a_postgresql_server_needs_the_key_even_on_loopback(url: str) -> None:
    """Probe M: processes sharing one PostgreSQL sit behind a proxy on loopback, where the
    development key had been allowed; one started without the key sealed a rotated webhook
    secret with the public key, and every keyed process then failed that App's deliveries."""
    settings = Settings(host="127.0.0.1", database_url=url, secret_key=None)
    with pytest.raises(SettingsError, match="REFCORE_SECRET_KEY is required with PostgreSQL"):
        keys.require_secret_key(settings)
    keys.require_secret_key(evolve(settings, secret_key="k" * 32))  # with a key it starts


def test_the_public_development_key_set_by_hand_is_no_key_either(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Probe AN: deployment.md hands the public key out as the old key of a change; set in
    ``REFCORE_SECRET_KEY`` by mistake, it served PostgreSQL and every interface silently."""
    public = keys.DEVELOPMENT_SECRET_KEY
    for settings in (
        Settings(host="127.0.0.1", database_url="postgresql://h/db", secret_key=public),
        Settings(host="0.0.0.0", database_url="sqlite:///refcore.db", secret_key=public),
    ):
        with pytest.raises(SettingsError, match="REFCORE_SECRET_KEY is the public development key"):
            keys.require_secret_key(settings)
    monkeypatch.setattr(keys, "_warned", False)
    keys.require_secret_key(
        Settings(host="127.0.0.1", database_url="sqlite:///refcore.db", secret_key=public)
    )
    assert "WARNING: REFCORE_SECRET_KEY is the public development key" in capsys.readouterr().err
