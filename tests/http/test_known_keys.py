"""Known keys (refcore_http.known_keys): a write with a key this app authenticated before asks the
database only whether the key still stands, in its work's first read, where the store's reads
join its writes (PostgreSQL; here the memory store told so). A revoked key must still fail at
once, with ``401`` whatever else is wrong with the request, and change nothing (decisions 1,
interface 5)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from attrs import evolve

import refcore_http.auth
from refcore.clocks import ManualClock
from refcore.services.principal import Principal, PrincipalKind
from refcore.services.runtime import Runtime
from refcore.services.tenancy import authenticate
from refcore_http.app import create_app
from refcore_http.known_keys import KnownKeys
from refcore_http.settings import Settings
from refcore_memstore import memory_runtime
from tests.http.world import Client, Tenant, expect, new_tenant


@pytest.fixture
def joining(clock: ManualClock) -> Runtime:
    return evolve(memory_runtime(clock=clock), reads_join_writes=True)


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The credentials the server authenticated by a read of their own, in order."""
    seen: list[str] = []

    def counting(runtime: Runtime, credential: str) -> Principal:
        seen.append(credential)
        return authenticate(runtime, credential)

    monkeypatch.setattr(refcore_http.auth, "authenticate", counting)
    yield seen


def _serving(runtime: Runtime, settings: Settings, name: str) -> tuple[Client, Tenant, str]:
    """An app over ``runtime``, a tenant, and a click of the tenant's link to identify."""
    client = Client(create_app(runtime, settings))
    tenant = new_tenant(client, runtime, name)
    captured = expect(client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code}), 201)
    return client, tenant, str(captured["click_id"])


def _revoke_live_key(client: Client, tenant: Tenant) -> None:
    keys = expect(client.get("/v1/api-keys", tenant.session, app_id=tenant.app_id), 200)["data"]
    live = next(key for key in keys if key["mode"] == "live")
    expect(client.delete(f"/v1/api-keys/{live['id']}", tenant.session), 200)


def _customer_emails(runtime: Runtime) -> list[str]:
    return sorted(c.email or "" for c in runtime.read(lambda tx: tx.uow.customers.find_all({})))


def test_known_key_a_write_with_it_reads_no_key_of_its_own(
    joining: Runtime, settings: Settings, lookups: list[str]
) -> None:
    client, tenant, click = _serving(joining, settings, "known")
    lookups.clear()

    for n in range(3):
        expect(client.post("/v1/identify", tenant.live_key, {"click_id": click, "email": f"{n}@b.io"}), 201)
    # The first read the key on its own; the others checked it in their identify's first read.
    assert lookups == [tenant.live_key]
    assert _customer_emails(joining) == ["0@b.io", "1@b.io", "2@b.io"]

    # A key not known yet is authenticated by a read of its own once, then known.
    expect(client.post("/v1/identify", tenant.test_key, {"click_id": "clk_none", "email": "t@b.io"}), 404)
    expect(client.post("/v1/identify", tenant.test_key, {"click_id": "clk_none", "email": "t@b.io"}), 404)
    assert lookups == [tenant.live_key, tenant.test_key]


def test_known_key_gets_neither_use_nor_fill_the_known_keys(
    joining: Runtime, settings: Settings, lookups: list[str]
) -> None:
    """A ``GET``'s reads cannot take the check: it reads its key every time, and teaches
    nothing to the writes after it."""
    client, tenant, click = _serving(joining, settings, "reads")
    lookups.clear()
    expect(client.get("/v1/clicks", tenant.live_key), 200)
    expect(client.get("/v1/clicks", tenant.live_key), 200)
    assert lookups == [tenant.live_key] * 2
    expect(client.post("/v1/identify", tenant.live_key, {"click_id": click, "email": "w@b.io"}), 201)
    assert lookups == [tenant.live_key] * 3  # not known from the GETs: read on its own once
    expect(client.get("/v1/clicks", tenant.live_key), 200)
    assert lookups == [tenant.live_key] * 4  # known now, but a GET still reads it


def test_known_key_revoked_stops_working_at_once_and_writes_nothing(
    joining: Runtime, settings: Settings, lookups: list[str]
) -> None:
    client, tenant, click = _serving(joining, settings, "revoked")
    expect(client.post("/v1/identify", tenant.live_key, {"click_id": click, "email": "before@b.io"}), 201)
    _revoke_live_key(client, tenant)
    lookups.clear()

    refused = client.post("/v1/identify", tenant.live_key, {"click_id": click, "email": "after@b.io"})
    expect(refused, 401, "unauthenticated")
    assert _customer_emails(joining) == ["before@b.io"]
    # Refused, the key is forgotten: the next request reads it on its own, and is refused again.
    expect(client.post("/v1/identify", tenant.live_key, {"click_id": click, "email": "again@b.io"}), 401)
    assert lookups == [tenant.live_key]
    assert _customer_emails(joining) == ["before@b.io"]


@pytest.mark.parametrize(
    ("path", "body", "status_if_standing"),
    [
        ("/v1/identify", {"click_id": 7, "email": "a@b.io"}, 400),  # bad input
        ("/v1/identify", {"click_id": "clk_none", "email": "a@b.io"}, 404),  # nothing to identify
        ("/v1/organizations", {"name": "Mine"}, 403),  # an App key may not create organizations
    ],
)
def test_known_key_revoked_is_401_whatever_else_is_wrong(
    joining: Runtime, settings: Settings, path: str, body: dict[str, object], status_if_standing: int
) -> None:
    client, tenant, _click = _serving(joining, settings, "precedence")
    expect(client.post(path, tenant.live_key, body), status_if_standing)  # known, still standing
    _revoke_live_key(client, tenant)
    expect(client.post(path, tenant.live_key, body), 401, "unauthenticated")


def test_known_key_is_kept_only_where_reads_join_writes(runtime: Runtime) -> None:
    """SQLite and the memory store as configured: every keyed write reads its key, as before."""
    assert not runtime.reads_join_writes
    known = KnownKeys()
    principal = Principal(kind=PrincipalKind.APP_KEY, app_id="app_1", key_id="akey_1")
    known.remember(runtime, "key_app_secret", principal)
    assert len(known) == 0


def test_known_keys_keep_keys_only_and_at_most_their_limit(joining: Runtime) -> None:
    known = KnownKeys(limit=2)
    principal = Principal(kind=PrincipalKind.APP_KEY, app_id="app_1", key_id="akey_1")
    known.remember(joining, "sess_token", Principal(kind=PrincipalKind.SESSION, user_id="usr_1"))
    assert len(known) == 0  # sessions end: never kept
    known.remember(joining, "key_app_one", principal)
    known.remember(joining, "key_app_two", principal)
    assert len(known) == 2
    known.remember(joining, "key_app_three", principal)
    assert len(known) == 1  # full: emptied, then the new one kept
    # Outside a write's block nothing can check the key: nothing is taken on trust.
    assert known.principal(joining, "key_app_three") is None
