"""One Authorization header per request (RFC 9110 allows a single field): a request that sends
several is refused ``401 unauthenticated``, whichever comes first and even when they are equal,
so that no proxy in front of refcore can authorise a request on a credential refcore did not use.
"""

from __future__ import annotations

import httpx
import pytest
from starlette.requests import Request

from refcore.errors import Unauthenticated
from refcore.services.runtime import Runtime
from refcore_http.auth import bearer_credential
from refcore_http.request_headers import header, repeated
from tests.http.world import Client, Tenant, expect, new_tenant


def send(client: Client, method: str, path: str, keys: list[str], json: object = None) -> httpx.Response:
    """``method path`` with one ``Authorization: Bearer`` header per key, in this order."""
    headers = [("Authorization", f"Bearer {key}") for key in keys]
    response: httpx.Response = client.http.request(method, path, headers=headers, json=json)
    return response


@pytest.fixture
def tenants(client: Client, runtime: Runtime) -> tuple[Tenant, Tenant]:
    return new_tenant(client, runtime, "acme"), new_tenant(client, runtime, "globex")


def test_one_authorization_header_still_authenticates(client: Client, tenants: tuple[Tenant, Tenant]) -> None:
    acme, _globex = tenants
    expect(send(client, "GET", "/v1/transactions", [acme.live_key]), 200)
    expect(send(client, "GET", "/v1/organizations", [acme.session]), 200)


def acme_payment(client: Client, acme: Tenant, payment_id: str) -> dict[str, object]:
    """A payment that Acme's live key may report: its customer came through Acme's link."""
    click = expect(client.post("/v1/capture", acme.live_key, {"via": acme.link_code}), 201)
    who = expect(
        client.post("/v1/identify", acme.live_key, {"click_id": click["click_id"], "email": "u@x.io"}), 201
    )
    return {
        "payment_id": payment_id,
        "customer_id": who["customer_id"],
        "program_id": acme.program_id,
        "amount": 10000,
        "currency": "usd",
    }


@pytest.mark.parametrize("order", ["acme_then_globex", "globex_then_acme"])
def test_one_authorization_header_rule_refuses_two_keys_in_either_order(
    client: Client, tenants: tuple[Tenant, Tenant], order: str
) -> None:
    acme, globex = tenants
    keys = [acme.live_key, globex.live_key]
    if order == "globex_then_acme":
        keys.reverse()
    for path in ("/v1/transactions", "/v1/clicks", "/v1/programs"):
        response = expect(send(client, "GET", path, keys), 401, "unauthenticated")
        assert "one Authorization header" in response["error"]["message"]
    payment = acme_payment(client, acme, "pay_1")
    refused = send(client, "POST", "/v1/transactions", keys, payment)
    expect(refused, 401, "unauthenticated")
    assert refused.headers["www-authenticate"] == "Bearer"
    for tenant in tenants:  # nothing was written, for either tenant
        assert expect(send(client, "GET", "/v1/transactions", [tenant.live_key]), 200)["data"] == []
    # The payment itself was good: with Acme's key alone it is accepted.
    expect(send(client, "POST", "/v1/transactions", [acme.live_key], payment), 201)


def test_one_authorization_header_rule_refuses_the_same_key_sent_twice(
    client: Client, tenants: tuple[Tenant, Tenant]
) -> None:
    acme, _globex = tenants
    expect(send(client, "GET", "/v1/transactions", [acme.live_key, acme.live_key]), 401, "unauthenticated")
    expect(send(client, "GET", "/v1/organizations", [acme.session, acme.session]), 401, "unauthenticated")


def test_one_authorization_header_rule_holds_on_capture_whose_credential_is_optional(
    client: Client, tenants: tuple[Tenant, Tenant]
) -> None:
    """Public capture sends no credential and is untouched; a server capture sending two is not
    taken for a public one."""
    acme, globex = tenants
    body = {"via": acme.link_code}
    expect(send(client, "POST", "/v1/capture", [], body), 201)
    expect(send(client, "POST", "/v1/capture", [acme.live_key], body), 201)
    expect(
        send(client, "POST", "/v1/capture", [acme.live_key, globex.live_key], body), 401, "unauthenticated"
    )
    expect(send(client, "POST", "/v1/capture", [acme.live_key, acme.live_key], body), 401, "unauthenticated")


def test_endpoints_that_ignore_credentials_still_ignore_them(client: Client) -> None:
    """``auth: none`` never reads Authorization, so there is no credential to be ambiguous about."""
    expect(send(client, "GET", "/v1", ["garbage", "more garbage"]), 200)


def _request(raw: list[tuple[bytes, bytes]]) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/v1/clicks", "headers": raw})


def test_repeated_tells_a_header_sent_twice_from_one_sent_once() -> None:
    raw = [
        (b"authorization", b"Bearer key_one"),
        (b"x-forwarded-for", b"203.0.113.7"),
        (b"x-forwarded-for", b"198.51.100.1"),
    ]
    request = _request(raw)
    assert header(request, b"authorization") == "Bearer key_one"
    assert not repeated(request, b"authorization")  # another header came twice, not this one
    assert repeated(request, b"x-forwarded-for")
    assert not repeated(request, b"content-type")
    assert not repeated(_request([(b"authorization", b"Bearer key_one")]), b"authorization")
    # Before any header() lookup, too.
    assert repeated(_request([*raw, (b"authorization", b"Bearer key_two")]), b"authorization")


@pytest.mark.parametrize(
    ("written", "credential"),
    [
        (b"Bearer key_app_x\xa0", "key_app_x\xa0"),
        (b"Bearer key_app_x\x85", "key_app_x\x85"),
        (b"Bearer \xa0key_app_x", "\xa0key_app_x"),
        (b"Bearer  key_app_x\t", "key_app_x"),
    ],
    ids=["no-break space after", "next line after", "no-break space before", "spaces and a tab"],
)
def test_only_http_blanks_surround_a_credential(written: bytes, credential: str) -> None:
    """Probe Q: the header's value is decoded as Latin-1, and ``str.strip()`` also took NO-BREAK
    SPACE (``\\xa0``) and NEXT LINE (``\\x85``): a key with one of them beside it authenticated
    as the key. Only spaces and tabs are HTTP's blanks; anything else is part of another
    credential, which no lookup finds. (Built as ASGI bytes: the test client re-encodes a
    header's value as UTF-8.)"""
    assert bearer_credential(_request([(b"authorization", written)])) == credential


def test_a_scheme_glued_to_a_no_break_space_is_no_bearer_scheme() -> None:
    with pytest.raises(Unauthenticated):
        bearer_credential(_request([(b"authorization", b"\xa0Bearer key_app_x")]))
