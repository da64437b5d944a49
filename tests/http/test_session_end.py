"""``DELETE /v1/session``: a session ends itself (signing out), on every server process; and a
session past its lifetime (``REFCORE_SESSION_TTL_HOURS``) is ``401`` like an unknown token."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore.services.tenancy import issue_affiliate_key
from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_memstore import memory_runtime
from refcore_sqlstore import SqlStore
from tests.http.world import Client, expect, new_session, new_tenant
from tests.stores import STORES

_MICROSECOND = timedelta(microseconds=1)


def test_a_session_ends_itself_and_its_token_is_then_unauthenticated(
    client: Client, runtime: Runtime
) -> None:
    token = new_session(runtime, "dev@example.com")
    expect(client.get("/v1/organizations", token), 200)
    ended = expect(client.delete("/v1/session", token), 200)
    assert ended["object"] == "session" and ended["deleted"] is True
    assert ended["id"].startswith("ses_") and ended["created_at"] == "2026-01-01T00:00:00.000Z"
    assert set(ended) == {"id", "object", "created_at", "deleted"}  # nothing of the token
    expect(client.get("/v1/organizations", token), 401, "unauthenticated")
    expect(client.post("/v1/organizations", token, {"name": "Acme"}), 401, "unauthenticated")
    # Ending it again: the token is refused like any unknown one, not a 404 that says it existed.
    unknown = client.delete("/v1/session", "sess_" + "x" * 43)
    again = client.delete("/v1/session", token)
    expect(again, 401, "unauthenticated")
    assert again.json() == unknown.json()


def test_the_users_other_session_still_works_after_one_signs_out(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    laptop = tenant.session
    phone = new_session(runtime, "owner@acme.example")
    expect(client.delete("/v1/session", laptop), 200)
    expect(client.get("/v1/organizations", laptop), 401, "unauthenticated")
    organizations = expect(client.get("/v1/organizations", phone), 200)["data"]
    assert [o["id"] for o in organizations] == [tenant.organization_id]
    expect(client.post("/v1/api-keys", phone, {"app_id": tenant.app_id, "kind": "app", "mode": "test"}), 201)


def test_keys_cannot_end_a_session_and_keep_working(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    affiliate_key = runtime.transaction(
        lambda tx: issue_affiliate_key(tx, tenant.app_id, tenant.affiliate_id).secret
    )
    for key in (tenant.live_key, tenant.test_key, affiliate_key):
        expect(client.delete("/v1/session", key), 403, "forbidden")
    expect(client.delete("/v1/session"), 401, "unauthenticated")
    expect(client.get("/v1/clicks", tenant.live_key), 200)
    expect(client.get("/v1/organizations", tenant.session), 200)


def test_the_endpoint_is_listed_as_a_session_route(client: Client) -> None:
    index = expect(client.get("/v1"), 200)
    assert {"method": "DELETE", "path": "/v1/session", "auth": "session"}.items() <= next(
        e for e in index["endpoints"] if e["path"] == "/v1/session"
    ).items()
    document = expect(client.get("/v1/openapi.json"), 200)
    operation = document["paths"]["/v1/session"]["delete"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/DeletedSession"
    }
    assert document["components"]["schemas"]["DeletedSession"]["properties"]["deleted"] == {"const": True}


@pytest.fixture(params=sorted(STORES))
def store_runtime(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[Runtime]:
    with STORES[request.param](clock) as rt:
        yield rt


def test_signing_out_and_expiry_over_http_on_every_store(store_runtime: Runtime, clock: ManualClock) -> None:
    """The request's own path on each store: on PostgreSQL the session's read and its end share
    the write's unit of work (``read_then_write``); on SQLite the read comes first, alone."""
    client = Client(create_app(store_runtime, Settings(database_url="memory://", session_ttl_hours=1)))
    leaving, staying = (
        new_session(store_runtime, "dev@example.com"),
        new_session(store_runtime, "dev@example.com"),
    )
    expect(client.delete("/v1/session", leaving), 200)
    expect(client.get("/v1/organizations", leaving), 401, "unauthenticated")
    expect(client.delete("/v1/session", leaving), 401, "unauthenticated")
    clock.advance(timedelta(hours=1) - _MICROSECOND)
    expect(client.post("/v1/organizations", staying, {"name": "Acme"}), 201)
    clock.advance(_MICROSECOND)
    expect(client.get("/v1/organizations", staying), 401, "unauthenticated")
    expect(client.post("/v1/organizations", staying, {"name": "Acme"}), 401, "unauthenticated")
    expect(client.delete("/v1/session", staying), 401, "unauthenticated")


def test_a_signed_out_session_is_refused_by_every_process_of_the_database(tmp_path: Path) -> None:
    """Two servers over one database (two stores, as two processes have): the session ended
    through one is refused by the other, which has no memory of it to forget."""
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    first, second = SqlStore(url), SqlStore(url)
    try:
        first.migrate()
        one = Client(create_app(first.runtime(), Settings(database_url=url)))
        two = Client(create_app(second.runtime(), Settings(database_url=url)))
        token = new_session(first.runtime(), "dev@example.com")
        expect(two.get("/v1/organizations", token), 200)
        expect(one.delete("/v1/session", token), 200)
        expect(two.get("/v1/organizations", token), 401, "unauthenticated")
        expect(one.get("/v1/organizations", token), 401, "unauthenticated")
    finally:
        first.dispose()
        second.dispose()


def test_a_session_is_refused_from_its_lifetime_on_like_an_unknown_token() -> None:
    clock = ManualClock()
    runtime = memory_runtime(clock=clock)
    settings = Settings.from_env({"REFCORE_SESSION_TTL_HOURS": "2"}, database_url="memory://")
    client = Client(create_app(runtime, settings))
    token = new_session(runtime, "dev@example.com")
    clock.advance(timedelta(hours=2) - _MICROSECOND)
    expect(client.get("/v1/organizations", token), 200)
    expect(client.post("/v1/organizations", token, {"name": "Acme"}), 201)
    clock.advance(_MICROSECOND)
    for response, unknown in (
        (client.get("/v1/organizations", token), client.get("/v1/organizations", "sess_unknown")),
        (
            client.post("/v1/organizations", token, {"name": "Acme"}),
            client.post("/v1/organizations", "sess_x"),
        ),
        (client.delete("/v1/session", token), client.delete("/v1/session", "sess_unknown")),
    ):
        expect(response, 401, "unauthenticated")
        assert response.json() == unknown.json()
        assert response.headers["www-authenticate"] == unknown.headers["www-authenticate"] == "Bearer"


def test_the_app_judges_sessions_by_its_settings_lifetime() -> None:
    runtime = memory_runtime(clock=ManualClock())
    create_app(runtime, Settings(database_url="memory://", session_ttl_hours=5))
    assert runtime.session_lifetime == timedelta(hours=5)
    create_app(runtime, Settings(database_url="memory://"))
    assert runtime.session_lifetime == timedelta(days=30)
