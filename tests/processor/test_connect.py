"""Connect link, claim and disconnect (interface 4.7): the state is signed, expiring, single-use and
bound to one App and mode; the App's processor flags follow the connections exactly."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.settings import Settings
from tests.http.world import Client, expect, new_tenant
from tests.processor.world import (
    CONNECT_URL,
    Installation,
    claim,
    connect,
    connect_link,
    new_installation,
    stored_app,
    stored_connections,
)


def test_connect_link_is_the_install_url_with_a_state_that_expires_in_an_hour(
    client: Client, runtime: Runtime, clock: ManualClock
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    link = connect_link(client, tenant.session, app_id=tenant.app_id, mode="live")
    url = urlsplit(link["url"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == CONNECT_URL.split("?")[0]
    query = parse_qs(url.query)
    assert query["client_id"] == ["ca_refcore"]
    assert query["state"] == [link["state"]]
    assert (link["app_id"], link["mode"], link["livemode"]) == (tenant.app_id, "live", True)
    assert link["expires_at"] == "2026-01-01T01:00:00.000Z"


def test_claim_binds_the_installation_and_sets_the_flag_of_that_mode_only(
    client: Client, runtime: Runtime
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    installation = new_installation(livemode=False)
    connection = connect(client, tenant, installation)
    assert connection["object"] == "processor_connection"
    assert (connection["app_id"], connection["mode"], connection["account_id"]) == (
        tenant.app_id,
        "test",
        installation.account,
    )
    assert connection["status"] == "active" and connection["disconnected_at"] is None
    app = stored_app(runtime, tenant.app_id)
    assert (app.processor_connected_test, app.processor_connected_live) == (True, False)
    assert (
        expect(client.get(f"/v1/processor/connections/{connection['id']}", tenant.test_key), 200)
        == connection
    )


def test_the_webhook_secret_is_stored_sealed_and_never_shown(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    installation = new_installation()
    response = claim(
        client,
        tenant.session,
        connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"],
        installation,
    )
    assert installation.secret not in response.text
    listed = client.get("/v1/processor/connections", tenant.session, app_id=tenant.app_id)
    assert installation.secret not in listed.text
    (stored,) = stored_connections(runtime, tenant.app_id)
    assert installation.secret not in repr(stored)
    assert stored.webhook_secret_ciphertext.startswith("v1.")


def test_an_app_key_connects_its_own_app_in_its_own_mode(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    link = connect_link(client, tenant.live_key)
    assert (link["app_id"], link["mode"]) == (tenant.app_id, "live")
    connection = expect(claim(client, tenant.live_key, link["state"], new_installation(livemode=True)), 201)
    assert connection["mode"] == "live"
    assert stored_app(runtime, tenant.app_id).processor_connected_live


def test_a_key_of_one_mode_cannot_connect_the_other(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    expect(client.post("/v1/processor/connect-link", tenant.test_key, {"mode": "live"}), 409, "mode_mismatch")
    live_state = connect_link(client, tenant.session, app_id=tenant.app_id, mode="live")["state"]
    expect(claim(client, tenant.test_key, live_state, new_installation(livemode=True)), 409, "mode_mismatch")
    assert stored_connections(runtime, tenant.app_id) == []


def test_a_key_reads_and_lists_only_its_own_modes_connections(client: Client, runtime: Runtime) -> None:
    """api.md: a key reads and writes its own mode only. A Test key had read and listed the Live
    connection (its processor account); a session still reads both."""
    tenant = new_tenant(client, runtime, "acme")
    live = connect(client, tenant, new_installation(livemode=True))
    test = connect(client, tenant, new_installation(livemode=False))
    assert (live["mode"], test["mode"]) == ("live", "test")
    refused = client.get(f"/v1/processor/connections/{live['id']}", tenant.test_key)
    assert expect(refused, 409, "mode_mismatch")["error"]["param"] == "id"
    assert "acct_" not in refused.text
    expect(client.get(f"/v1/processor/connections/{test['id']}", tenant.live_key), 409, "mode_mismatch")
    assert expect(client.get(f"/v1/processor/connections/{live['id']}", tenant.live_key), 200) == live
    for key, own in ((tenant.test_key, test), (tenant.live_key, live)):
        listed = expect(client.get("/v1/processor/connections", key), 200)
        assert [c["id"] for c in listed["data"]] == [own["id"]]
    both = expect(client.get("/v1/processor/connections", tenant.session, app_id=tenant.app_id), 200)
    assert {c["id"] for c in both["data"]} == {live["id"], test["id"]}
    expect(client.get(f"/v1/processor/connections/{live['id']}", tenant.session), 200)


def test_a_session_names_the_app_and_the_mode(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    response = client.post("/v1/processor/connect-link", tenant.session, {"mode": "test"})
    assert expect(response, 400, "validation_error")["error"]["param"] == "app_id"
    response = client.post("/v1/processor/connect-link", tenant.session, {"app_id": tenant.app_id})
    assert expect(response, 400, "validation_error")["error"]["param"] == "mode"


def test_an_expired_state_cannot_be_claimed(client: Client, runtime: Runtime, clock: ManualClock) -> None:
    tenant = new_tenant(client, runtime, "acme")
    state = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    clock.advance(timedelta(hours=1))
    response = claim(client, tenant.session, state, new_installation())
    body = expect(response, 400, "validation_error")
    assert body["error"]["param"] == "state" and "expired" in body["error"]["message"]
    assert stored_connections(runtime, tenant.app_id) == []
    assert not stored_app(runtime, tenant.app_id).processor_connected_test


def test_an_exact_retry_of_a_claim_is_answered_after_its_state_expired(
    client: Client, runtime: Runtime, clock: ManualClock
) -> None:
    """A stored answer never changes (docs/decisions.md): a retry an hour later had been told the
    state expired, and a new link then that the App was already connected (probe AG)."""
    tenant = new_tenant(client, runtime, "acme")
    state = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    installation = new_installation()
    first = expect(claim(client, tenant.session, state, installation), 201)
    clock.advance(timedelta(hours=2))
    assert expect(claim(client, tenant.session, state, installation), 200) == first
    body = expect(claim(client, tenant.session, state, new_installation()), 409, "state_conflict")
    assert body["error"]["param"] == "state"
    assert len(stored_connections(runtime, tenant.app_id)) == 1


def test_a_state_claimed_just_before_it_expires_is_accepted(
    client: Client, runtime: Runtime, clock: ManualClock
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    state = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    clock.advance(timedelta(hours=1) - timedelta(seconds=1))
    expect(claim(client, tenant.session, state, new_installation()), 201)


def test_a_link_made_between_seconds_expires_when_it_says(
    client: Client, runtime: Runtime, clock: ManualClock
) -> None:
    """The state carries its expiry in whole seconds; ``expires_at`` said up to a second later,
    so a claim in that second was refused while the link still promised it."""
    tenant = new_tenant(client, runtime, "acme")
    clock.advance(timedelta(milliseconds=744))
    link = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")
    assert link["expires_at"] == "2026-01-01T01:00:00.000Z"
    clock.advance(timedelta(hours=1) - timedelta(milliseconds=745))  # 00:59:59.999
    expect(claim(client, tenant.session, link["state"], new_installation()), 201)
    other = new_tenant(client, runtime, "beta")
    late = connect_link(client, other.session, app_id=other.app_id, mode="test")
    clock.advance(timedelta(hours=1))
    assert (
        "expired"
        in expect(claim(client, other.session, late["state"], new_installation()), 400)["error"]["message"]
    )


def _tampered(state: str) -> list[str]:
    version, body, mac = state.split(".")
    flip = {"A": "B", "B": "A"}
    other_body = body[:-2] + flip.get(body[-2], "A") + body[-1]
    other_mac = mac[:5] + ("A" if mac[5] != "A" else "B") + mac[6:]
    return [
        f"{version}.{other_body}.{mac}",  # the payload changed (another App, mode or expiry)
        f"{version}.{body}.{other_mac}",  # the signature changed
        f"v2.{body}.{mac}",
        f"{version}.{body}",
        "not-a-state",
    ]


@pytest.mark.parametrize("variant", range(5))
def test_a_tampered_state_is_refused(client: Client, runtime: Runtime, variant: int) -> None:
    tenant = new_tenant(client, runtime, "acme")
    state = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    response = claim(client, tenant.session, _tampered(state)[variant], new_installation())
    assert expect(response, 400, "validation_error")["error"]["param"] == "state"
    assert stored_connections(runtime, tenant.app_id) == []


def test_a_state_signed_with_another_server_key_is_refused(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    other_key = Settings(database_url="memory://", secret_key="k" * 40, processor_connect_url=CONNECT_URL)
    other_server = Client(create_app(runtime, other_key))
    foreign = connect_link(other_server, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    expect(claim(client, tenant.session, foreign, new_installation()), 400, "validation_error")


def _server(runtime: Runtime, key: str, fallback: str | None = None) -> Client:
    settings = Settings(
        database_url="memory://",
        secret_key=key,
        secret_key_fallback=fallback,
        processor_connect_url=CONNECT_URL,
    )
    return Client(create_app(runtime, settings))


_OLD_KEY = "processor-tests-old-server-key-0123456789"
_NEW_KEY = "processor-tests-new-server-key-0123456789"


def test_a_state_signed_under_the_old_key_verifies_on_a_server_whose_fallback_it_is(runtime: Runtime) -> None:
    """A link issued just before a process switched keys can be claimed on one that has: the
    state's MAC is checked under the fallback's derived key too."""
    old = _server(runtime, _OLD_KEY)
    switched = _server(runtime, _NEW_KEY, fallback=_OLD_KEY)
    tenant = new_tenant(old, runtime, "acme")
    state = connect_link(old, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    expect(claim(switched, tenant.session, state, new_installation()), 201)


def test_a_state_is_signed_under_the_current_key_not_the_fallback(runtime: Runtime) -> None:
    """During step (a) (old key current, new key as fallback) links are still signed with the
    old key, which every process of the fleet has; a process holding only the new key refuses them."""
    rolling = _server(runtime, _OLD_KEY, fallback=_NEW_KEY)
    new_only = _server(runtime, _NEW_KEY)
    old_only = _server(runtime, _OLD_KEY)
    tenant = new_tenant(rolling, runtime, "acme")
    state = connect_link(rolling, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    expect(claim(new_only, tenant.session, state, new_installation()), 400, "validation_error")
    expect(claim(old_only, tenant.session, state, new_installation()), 201)


def test_without_a_fallback_a_state_signed_under_the_old_key_is_refused_as_before(runtime: Runtime) -> None:
    old = _server(runtime, _OLD_KEY)
    tenant = new_tenant(old, runtime, "acme")
    state = connect_link(old, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    expect(
        claim(_server(runtime, _NEW_KEY), tenant.session, state, new_installation()), 400, "validation_error"
    )


def test_a_state_of_another_app_is_refused(client: Client, runtime: Runtime) -> None:
    acme = new_tenant(client, runtime, "acme")
    rival = new_tenant(client, runtime, "rival")
    acme_state = connect_link(client, acme.session, app_id=acme.app_id, mode="test")["state"]
    # The rival's key (its own App) and the rival's session naming its own App: refused outright.
    body = expect(claim(client, rival.test_key, acme_state, new_installation()), 400, "validation_error")
    assert body["error"]["param"] == "state" and "another App" in body["error"]["message"]
    expect(claim(client, rival.session, acme_state, new_installation(), app_id=rival.app_id), 400)
    # The rival's session not naming an App: acme's App is not the rival's to see.
    expect(claim(client, rival.session, acme_state, new_installation()), 404, "app_not_found")
    assert stored_connections(runtime, acme.app_id) == stored_connections(runtime, rival.app_id) == []


def test_a_state_is_claimed_once_and_an_exact_retry_answers_the_same_connection(
    client: Client, runtime: Runtime
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    state = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    installation = new_installation()
    first = expect(claim(client, tenant.session, state, installation), 201)
    assert expect(claim(client, tenant.session, state, installation), 200) == first
    expect(claim(client, tenant.session, state, new_installation()), 409, "state_conflict")
    assert len(stored_connections(runtime, tenant.app_id)) == 1


def test_one_active_connection_per_app_and_mode(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    connect(client, tenant, new_installation())
    response = client.post(
        "/v1/processor/connect-link", tenant.session, {"app_id": tenant.app_id, "mode": "test"}
    )
    expect(response, 409, "state_conflict")
    connect(client, tenant, new_installation(livemode=True))  # the other mode is independent
    app = stored_app(runtime, tenant.app_id)
    assert app.processor_connected_test and app.processor_connected_live


def test_a_state_made_before_a_concurrent_claim_cannot_add_a_second_connection(
    client: Client, runtime: Runtime
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    first = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    second = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    expect(claim(client, tenant.session, first, new_installation()), 201)
    expect(claim(client, tenant.session, second, new_installation()), 409, "state_conflict")


def test_an_account_connected_to_another_app_can_still_be_claimed_and_the_claim_says_nothing_of_it(
    client: Client, runtime: Runtime
) -> None:
    """refcore cannot tell who owns an account, so a claim of an account another App connected is
    not refused: refused, anyone could claim a tenant's account first with an invented secret and
    lock its owner out, and learn from the refusal which accounts are connected (probe AG)."""
    squatter = new_tenant(client, runtime, "squatter")
    owner = new_tenant(client, runtime, "owner")
    real = new_installation()
    connect(client, squatter, Installation(account=real.account, secret="whsec_invented", livemode=False))
    state = connect_link(client, owner.session, app_id=owner.app_id, mode="test")["state"]
    body = expect(claim(client, owner.session, state, real), 201)
    assert (body["app_id"], body["account_id"], body["status"]) == (owner.app_id, real.account, "active")
    assert stored_app(runtime, owner.app_id).processor_connected_test
    assert stored_app(runtime, squatter.app_id).processor_connected_test


@pytest.mark.parametrize(
    ("field", "value"),
    [("account_id", "sk_live_notanaccount"), ("account_id", "acct_"), ("webhook_secret", "sk_test_123")],
)
def test_claim_checks_the_account_and_secret_look_like_the_processors(
    client: Client, runtime: Runtime, field: str, value: str
) -> None:
    tenant = new_tenant(client, runtime, "acme")
    state = connect_link(client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    installation = new_installation()
    body = {"state": state, "account_id": installation.account, "webhook_secret": installation.secret}
    body[field] = value
    response = client.post("/v1/processor/claim-pending-install", tenant.session, body)
    assert expect(response, 400, "validation_error")["error"]["param"] == field
    if field == "webhook_secret":
        assert value not in response.text


def test_disconnect_ends_one_mode_and_clears_its_flag(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    test_connection = connect(client, tenant, new_installation())
    connect(client, tenant, new_installation(livemode=True))
    ended = expect(client.post("/v1/processor/disconnect", tenant.test_key, {}), 200)
    assert ended["id"] == test_connection["id"]
    assert ended["status"] == "disconnected" and ended["disconnected_at"] is not None
    app = stored_app(runtime, tenant.app_id)
    assert (app.processor_connected_test, app.processor_connected_live) == (False, True)
    (stored,) = [c for c in stored_connections(runtime, tenant.app_id) if c.id == ended["id"]]
    assert stored.webhook_secret_ciphertext == ""  # the secret is destroyed, the row stays
    expect(
        client.post("/v1/processor/disconnect", tenant.test_key, {}), 404, "processor_connection_not_found"
    )


def test_after_disconnect_the_mode_can_be_connected_again(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    installation = new_installation()
    connect(client, tenant, installation)
    expect(
        client.post("/v1/processor/disconnect", tenant.session, {"app_id": tenant.app_id, "mode": "test"}),
        200,
    )
    again = connect(client, tenant, installation)
    assert again["status"] == "active"
    listed = expect(client.get("/v1/processor/connections", tenant.session, app_id=tenant.app_id), 200)
    assert [c["status"] for c in listed["data"]] == ["active", "disconnected"]
    assert stored_app(runtime, tenant.app_id).processor_connected_test


def test_another_tenant_cannot_see_or_disconnect_a_connection(client: Client, runtime: Runtime) -> None:
    acme = new_tenant(client, runtime, "acme")
    rival = new_tenant(client, runtime, "rival")
    connection = connect(client, acme, new_installation())
    expect(
        client.get(f"/v1/processor/connections/{connection['id']}", rival.session),
        404,
        "processor_connection_not_found",
    )
    expect(client.get("/v1/processor/connections", rival.test_key, app_id=acme.app_id), 404, "app_not_found")
    response = client.post("/v1/processor/disconnect", rival.session, {"app_id": acme.app_id, "mode": "test"})
    expect(response, 404, "app_not_found")
    assert stored_app(runtime, acme.app_id).processor_connected_test


def test_connect_link_is_refused_when_the_server_has_no_install_url(runtime: Runtime) -> None:
    client = Client(create_app(runtime, Settings(database_url="memory://", secret_key="s" * 40)))
    tenant = new_tenant(client, runtime, "acme")
    expect(client.post("/v1/processor/connect-link", tenant.test_key, {}), 409, "state_conflict")


def test_connections_work_on_every_store(store_client: Client, store_runtime: Runtime) -> None:
    tenant = new_tenant(store_client, store_runtime, "acme")
    installation = new_installation()
    state = connect_link(store_client, tenant.session, app_id=tenant.app_id, mode="test")["state"]
    first = expect(claim(store_client, tenant.session, state, installation), 201)
    assert expect(claim(store_client, tenant.session, state, installation), 200) == first
    rival = new_tenant(store_client, store_runtime, "rival")
    rival_state = connect_link(store_client, rival.session, app_id=rival.app_id, mode="test")["state"]
    # The account is not unique to one App, but one secret can verify for one App only.
    same_secret = expect(claim(store_client, rival.session, rival_state, installation), 409, "state_conflict")
    assert same_secret["error"]["param"] == "webhook_secret"
    expect(store_client.post("/v1/processor/disconnect", tenant.test_key, {}), 200)
    assert not stored_app(store_runtime, tenant.app_id).processor_connected_test
    expect(claim(store_client, rival.session, rival_state, installation), 201)
    assert stored_app(store_runtime, rival.app_id).processor_connected_test
    expect(claim(store_client, tenant.session, state, installation), 409, "state_conflict")  # used
