"""The inbound event route is public and authenticated only by the processor's signature: an event
is acted on only when its ``Stripe-Signature`` verifies with the secret of the connection its
``account`` and ``livemode`` name, within five minutes of the server's clock."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.models import Mode
from refcore.models.processor import CONNECTION_PREFIX, ProcessorConnection, account_mode_key, app_mode_key
from refcore.services.processor_connection import ProcessorKeys
from refcore.services.runtime import Runtime, Tx
from refcore_http.app import create_app
from refcore_http.settings import Settings
from tests.http.world import Client, Tenant, expect, new_tenant
from tests.processor import payloads
from tests.processor.world import (
    CONNECT_URL,
    SECRET_KEY,
    Installation,
    claim,
    connect,
    connect_link,
    deliver,
    new_installation,
    post_event,
    referred_customer,
    stored_app,
)


def _charge(
    client: Client, tenant: Tenant, installation: Installation, clock: ManualClock, charge_id: str
) -> dict:
    key = tenant.live_key if installation.livemode else tenant.test_key
    who = referred_customer(client, tenant, key, charge_id)
    return payloads.charge(
        charge_id=charge_id,
        amount=5000,
        metadata=who["processor_metadata"],
        created=clock.now(),
        livemode=installation.livemode,
    )


def _payments(client: Client, key: str) -> list[str]:
    return [p["payment_id"] for p in expect(client.get("/v1/transactions", key, limit=100), 200)["data"]]


def test_a_correctly_signed_event_is_recorded(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    charge = _charge(client, acme, installation, clock, "ch_signed")
    response = deliver(client, installation, "charge.succeeded", charge, at=clock.now())
    assert expect(response, 200)["handled"] is True
    assert _payments(client, acme.test_key) == ["ch_signed"]


def test_an_event_signed_with_another_secret_is_refused(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    charge = _charge(client, acme, installation, clock, "ch_forged")
    response = deliver(
        client, installation, "charge.succeeded", charge, at=clock.now(), sign_with="whsec_guess"
    )
    body = expect(response, 400, "invalid_signature")
    assert installation.secret not in response.text and "whsec_guess" not in body["error"]["message"]
    assert _payments(client, acme.test_key) == []


def test_a_body_changed_after_signing_is_refused(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    charge = _charge(client, acme, installation, clock, "ch_altered")
    body = payloads.encode(
        payloads.event(
            "charge.succeeded", charge, account=installation.account, livemode=False, created=clock.now()
        )
    )
    header = payloads.sign(body, installation.secret, clock.now())
    altered = body.replace(b'"amount": 5000', b'"amount": 9000', 1)
    assert altered != body
    expect(post_event(client, altered, header), 400, "invalid_signature")
    assert _payments(client, acme.test_key) == []


@pytest.mark.parametrize("offset", [timedelta(minutes=-5, seconds=-1), timedelta(minutes=5, seconds=1)])
def test_a_signature_outside_five_minutes_is_refused(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, offset: timedelta
) -> None:
    charge = _charge(client, acme, installation, clock, "ch_stale")
    response = deliver(client, installation, "charge.succeeded", charge, at=clock.now() + offset)
    assert "tolerance" in expect(response, 400, "invalid_signature")["error"]["message"]
    assert _payments(client, acme.test_key) == []


@pytest.mark.parametrize("offset", [timedelta(minutes=-5), timedelta(minutes=5)])
def test_a_signature_within_five_minutes_is_accepted(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, offset: timedelta
) -> None:
    charge = _charge(client, acme, installation, clock, "ch_fresh")
    expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now() + offset), 200)


def test_a_replayed_capture_is_refused_once_it_is_stale(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """A captured, correctly signed delivery replayed later: the timestamp gives it away."""
    charge = _charge(client, acme, installation, clock, "ch_replayed")
    body = payloads.encode(
        payloads.event(
            "charge.succeeded", charge, account=installation.account, livemode=False, created=clock.now()
        )
    )
    header = payloads.sign(body, installation.secret, clock.now())
    expect(post_event(client, body, header), 200)
    clock.advance(timedelta(minutes=6))
    expect(post_event(client, body, header), 400, "invalid_signature")


@pytest.mark.parametrize(
    "rewrite",
    [
        "t=+{old},t={now}",
        "t= {old},t={now}",
        "t={old},t={now}",
        "t={now},t={old}",
        " t={now},t={old}",
        "t=0{old}",
    ],
)
def test_a_stale_capture_cannot_be_refreshed_by_rewriting_its_timestamp(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, rewrite: str
) -> None:
    """docs/processor.md, check 4: a captured delivery replayed later is refused. The signature
    is checked over the first ``t`` that ``int()`` reads (``+old`` and `` old`` included); had
    the freshness check read a second, current ``t``, the week-old capture would verify."""
    charge = _charge(client, acme, installation, clock, "ch_rewritten")
    signed = clock.now() - timedelta(days=7)
    body = payloads.encode(
        payloads.event(
            "charge.succeeded", charge, account=installation.account, livemode=False, created=signed
        )
    )
    captured = payloads.sign(body, installation.secret, signed)
    old, now = int(signed.timestamp()), int(clock.now().timestamp())
    assert captured.startswith(f"t={old},")
    header = captured.replace(f"t={old}", rewrite.format(old=old, now=now), 1)
    expect(post_event(client, body, header), 400, "invalid_signature")
    assert _payments(client, acme.test_key) == []


@pytest.mark.parametrize(
    "header",
    [None, "", "v1=0123", "t=notanumber,v1=00", "t=1767225600", "t=1767225600,v0=abc"],
)
def test_a_missing_or_malformed_signature_header_is_refused(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, header: str | None
) -> None:
    charge = _charge(client, acme, installation, clock, "ch_unsigned")
    body = payloads.encode(
        payloads.event(
            "charge.succeeded", charge, account=installation.account, livemode=False, created=clock.now()
        )
    )
    expect(post_event(client, body, header), 400, "invalid_signature")
    assert _payments(client, acme.test_key) == []


@pytest.mark.parametrize("header", ["t=abc,v1=00", "t=1,t=2,v1=00", "v1=00"])
def test_a_malformed_header_answers_alike_whether_or_not_the_account_is_connected(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, header: str
) -> None:
    """docs/processor.md: the route is no oracle for which accounts are connected. The header's
    form is checked before the connection is looked up, so its refusal cannot differ by account."""
    answers = []
    for account in (installation.account, new_installation().account):
        body = payloads.encode(
            payloads.event(
                "charge.succeeded",
                payloads.charge(charge_id="ch_oracle", amount=100, created=clock.now()),
                account=account,
                livemode=False,
                created=clock.now(),
            )
        )
        response = post_event(client, body, header)
        answers.append((response.status_code, expect(response, 400, "invalid_signature")))
    assert answers[0] == answers[1]


def test_one_matching_signature_among_several_is_enough(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """While the processor rolls a secret it sends one ``v1`` per secret."""
    charge = _charge(client, acme, installation, clock, "ch_rolling")
    body = payloads.encode(
        payloads.event(
            "charge.succeeded", charge, account=installation.account, livemode=False, created=clock.now()
        )
    )
    good = payloads.sign(body, installation.secret, clock.now())
    old = payloads.sign(body, "whsec_rolled_away", clock.now())
    header = f"{good},v1={old.split('v1=')[1]}"
    expect(post_event(client, body, header), 200)


def test_an_event_naming_another_apps_account_does_not_verify(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """Acme knows its own secret; it cannot use it to write into the rival's App."""
    rival = new_tenant(client, runtime, "rival")
    rival_test = new_installation()
    connect(client, rival, rival_test)
    who = referred_customer(client, rival, rival.test_key, "victim")
    charge = payloads.charge(
        charge_id="ch_injected", amount=5000, metadata=who["processor_metadata"], created=clock.now()
    )
    response = deliver(
        client,
        installation,
        "charge.succeeded",
        charge,
        at=clock.now(),
        account=rival_test.account,
        sign_with=installation.secret,
    )
    expect(response, 400, "invalid_signature")
    assert _payments(client, rival.test_key) == _payments(client, acme.test_key) == []


def test_an_event_is_recorded_only_in_the_app_of_its_account(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    rival = new_tenant(client, runtime, "rival")
    connect(client, rival, new_installation())
    charge = _charge(client, acme, installation, clock, "ch_acme_only")
    expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 200)
    assert _payments(client, acme.test_key) == ["ch_acme_only"]
    assert _payments(client, rival.test_key) == []


def test_an_account_claimed_by_two_apps_delivers_each_event_to_the_app_whose_secret_signed_it(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """A squatter who claimed acme's account with an invented secret (connected first) neither
    blocks acme's deliveries nor receives them; what the squatter signs itself lands only in its
    own App, and what neither secret signs is refused."""
    squatter = new_tenant(client, runtime, "squatter")
    connect(
        client, squatter, Installation(account=installation.account, secret="whsec_invented", livemode=False)
    )
    owned = _charge(client, acme, installation, clock, "ch_owners")
    expect(deliver(client, installation, "charge.succeeded", owned, at=clock.now()), 200)
    own = _charge(client, squatter, installation, clock, "ch_squatters")
    expect(
        deliver(client, installation, "charge.succeeded", own, at=clock.now(), sign_with="whsec_invented"),
        200,
    )
    forged = _charge(client, acme, installation, clock, "ch_forged_both")
    expect(
        deliver(client, installation, "charge.succeeded", forged, at=clock.now(), sign_with="whsec_guess"),
        400,
        "invalid_signature",
    )
    assert _payments(client, acme.test_key) == ["ch_owners"]
    assert _payments(client, squatter.test_key) == ["ch_squatters"]


def test_a_second_app_claiming_an_account_with_the_same_secret_is_refused_and_told_why(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """The processor's signatures could not tell two Apps with one secret apart: the later claim
    is refused, naming the secret, and acme keeps receiving its events (probe AH). Only a caller
    that holds the secret learns that the account is connected."""
    later = new_tenant(client, runtime, "later")
    state = connect_link(client, later.session, app_id=later.app_id, mode="test")["state"]
    refused = expect(claim(client, later.session, state, installation), 409, "state_conflict")
    assert refused["error"]["param"] == "webhook_secret"
    assert installation.secret not in str(refused)
    assert not stored_app(runtime, later.app_id).processor_connected_test
    charge = _charge(client, acme, installation, clock, "ch_still_acmes")
    expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 200)
    assert _payments(client, acme.test_key) == ["ch_still_acmes"]


def test_a_secret_two_connections_share_verifies_for_the_one_connected_first(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """Two claims with one secret at the same moment may both pass the claim's check (it is no
    unique key); each event is then recorded in one App only, the one connected first."""
    later = new_tenant(client, runtime, "later")
    clock.advance(timedelta(seconds=1))
    _add_connection(runtime, later.app_id, installation)
    charge = _charge(client, acme, installation, clock, "ch_shared_secret")
    body = expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 200)
    assert [record["payment_id"] for record in body["records"]] == ["ch_shared_secret"]
    assert _payments(client, acme.test_key) == ["ch_shared_secret"]
    assert _payments(client, later.test_key) == []


def test_a_connection_whose_secret_this_server_cannot_open_blocks_no_other_app_of_its_account(
    client: Client, runtime: Runtime, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """A squatter's connection sealed under a key the server lacks had answered acme's own
    deliveries with 500 (probe AH). It is skipped; only a delivery no openable secret verifies
    is the documented 500 of a changed server key, since the unopened one might have."""
    squatter = new_tenant(client, runtime, "squatter")
    _add_connection(  # connected before acme, so tried first
        runtime,
        squatter.app_id,
        installation,
        keys=ProcessorKeys("another-server-key-0123456789abcdef"),
        connected_at=clock.now() - timedelta(days=1),
    )
    charge = _charge(client, acme, installation, clock, "ch_past_the_unopenable")
    expect(deliver(client, installation, "charge.succeeded", charge, at=clock.now()), 200)
    assert _payments(client, acme.test_key) == ["ch_past_the_unopenable"]
    forged = _charge(client, acme, installation, clock, "ch_nobodys")
    response = deliver(client, installation, "charge.succeeded", forged, at=clock.now(), sign_with="whsec_x")
    assert response.status_code == 500
    # Matched but stale, or malformed: refused as ever, whatever the unopened secret would say.
    stale = _charge(client, acme, installation, clock, "ch_stale")
    at = clock.now() - timedelta(minutes=10)
    expect(deliver(client, installation, "charge.succeeded", stale, at=at), 400, "invalid_signature")
    body = payloads.encode(
        payloads.event("charge.succeeded", stale, account=installation.account, livemode=False, created=at)
    )
    expect(post_event(client, body, f"t={int(clock.now().timestamp())}"), 400, "invalid_signature")
    assert _payments(client, acme.test_key) == ["ch_past_the_unopenable"]


def _add_connection(
    runtime: Runtime,
    app_id: str,
    installation: Installation,
    *,
    keys: ProcessorKeys | None = None,
    connected_at: datetime | None = None,
) -> None:
    """An active connection of ``app_id`` to the installation's account, written as a claim
    writes it but without the claim's checks (what two claims at one moment can leave)."""
    keys = keys or ProcessorKeys(SECRET_KEY)
    mode = Mode.LIVE if installation.livemode else Mode.TEST

    def work(tx: Tx) -> None:
        connection_id = tx.new_id(CONNECTION_PREFIX)
        tx.uow.processor_connections.add(
            ProcessorConnection(
                id=connection_id,
                app_id=app_id,
                mode=mode,
                account_id=installation.account,
                webhook_secret_ciphertext=keys.seal_secret(connection_id, app_id, installation.secret),
                install_nonce=f"nonce-{connection_id}",
                created_at=tx.now,
                connected_at=connected_at or tx.now,
                active_app_mode=app_mode_key(app_id, mode),
                active_account_mode=account_mode_key(installation.account, mode),
            )
        )

    runtime.transaction(work)


def test_an_event_of_an_unknown_account_is_refused(client: Client, clock: ManualClock, acme: Tenant) -> None:
    stranger = new_installation()
    charge = payloads.charge(charge_id="ch_stranger", amount=100, created=clock.now())
    expect(deliver(client, stranger, "charge.succeeded", charge, at=clock.now()), 400, "invalid_signature")


def test_a_disconnected_mode_refuses_its_events_and_the_other_mode_still_accepts(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    acme_live = Installation(
        account=installation.account, secret="whsec_liveJf8cVbNqM2fGxK3nP7rTzW", livemode=True
    )
    connect(client, acme, acme_live)
    expect(client.post("/v1/processor/disconnect", acme.test_key, {}), 200)
    test_charge = _charge(client, acme, installation, clock, "ch_after_disconnect")
    expect(
        deliver(client, installation, "charge.succeeded", test_charge, at=clock.now()),
        400,
        "invalid_signature",
    )
    live_charge = _charge(client, acme, acme_live, clock, "ch_live_still")
    expect(deliver(client, acme_live, "charge.succeeded", live_charge, at=clock.now()), 200)
    assert _payments(client, acme.test_key) == []
    assert _payments(client, acme.live_key) == ["ch_live_still"]


def test_an_event_claiming_the_other_mode_does_not_verify(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    """``livemode`` selects the connection: a Test secret cannot sign a Live event."""
    as_live = Installation(account=installation.account, secret=installation.secret, livemode=True)
    charge = payloads.charge(charge_id="ch_mode", amount=100, created=clock.now(), livemode=True)
    expect(deliver(client, as_live, "charge.succeeded", charge, at=clock.now()), 400, "invalid_signature")
    assert _payments(client, acme.live_key) == []


@pytest.mark.parametrize("missing", ["account", "livemode"])
def test_an_event_without_its_account_or_mode_is_refused(
    client: Client, clock: ManualClock, installation: Installation, missing: str
) -> None:
    payload = payloads.event(
        "charge.succeeded",
        payloads.charge(charge_id="ch_nowhere", amount=100, created=clock.now()),
        account=installation.account,
        livemode=False,
        created=clock.now(),
    )
    del payload[missing]
    body = payloads.encode(payload)
    expect(
        post_event(client, body, payloads.sign(body, installation.secret, clock.now())),
        400,
        "invalid_signature",
    )


def test_a_body_that_is_not_json_is_invalid_json(
    client: Client, clock: ManualClock, installation: Installation
) -> None:
    body = b"account=acct_1&type=charge.succeeded"
    expect(
        post_event(client, body, payloads.sign(body, installation.secret, clock.now())), 400, "invalid_json"
    )


def test_the_route_needs_no_credential_and_ignores_one(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation
) -> None:
    charge = _charge(client, acme, installation, clock, "ch_bearer")
    body = payloads.encode(
        payloads.event(
            "charge.succeeded", charge, account=installation.account, livemode=False, created=clock.now()
        )
    )
    response = client.request(
        "POST",
        "/v1/processor/events",
        acme.session,
        content=body,
        headers={"Content-Type": "application/json", "Stripe-Signature": "t=1,v1=00"},
    )
    expect(response, 400, "invalid_signature")  # a session does not stand in for the signature
    index = expect(client.get("/v1"), 200)
    (entry,) = [e for e in index["endpoints"] if e["path"] == "/v1/processor/events"]
    assert (entry["method"], entry["auth"]) == ("POST", "none")


_OLD_KEY = "processor-signature-old-server-key-012345"
_NEW_KEY = "processor-signature-new-server-key-012345"


def test_a_connection_secret_sealed_under_the_old_key_verifies_events_through_the_fallback(
    runtime: Runtime, clock: ManualClock
) -> None:
    """The processor's webhook secret, sealed when the old key was current, opens on a process
    that has moved to the new key with the old one as its fallback; without the fallback it
    does not (the event is not acted on)."""

    def server(key: str, fallback: str | None = None) -> Client:
        return Client(
            create_app(
                runtime,
                Settings(
                    database_url="memory://",
                    secret_key=key,
                    secret_key_fallback=fallback,
                    processor_connect_url=CONNECT_URL,
                ),
            )
        )

    old = server(_OLD_KEY)
    tenant = new_tenant(old, runtime, "acme")
    installation = new_installation()
    connect(old, tenant, installation)
    obj = {"id": "obj_1", "object": "customer", "metadata": {}}
    switched = server(_NEW_KEY, fallback=_OLD_KEY)
    assert (
        expect(deliver(switched, installation, "customer.created", obj, at=clock.now()), 200)["handled"]
        is False
    )
    response = deliver(server(_NEW_KEY), installation, "customer.created", obj, at=clock.now())
    assert response.status_code == 500
    assert _OLD_KEY not in response.text and _NEW_KEY not in response.text
