"""Public browser capture: no key, CORS, and visitor metadata only from the request (decisions 3)."""

from __future__ import annotations

import httpx
import pytest
from attrs import evolve

from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.settings import Settings, parse_networks
from refcore_http.visitors import client_ip
from tests.http.world import Client, Tenant, expect, new_tenant


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


def _clicks(runtime: Runtime) -> list[object]:
    return runtime.read(lambda tx: tx.uow.clicks.find_all({}))


@pytest.mark.parametrize("field", ["visitor_ip", "visitor_user_agent"])
def test_public_capture_refuses_visitor_fields_in_the_body(
    client: Client, runtime: Runtime, tenant: Tenant, field: str
) -> None:
    for value in ("198.51.100.1", None):
        response = client.post("/v1/capture", json={"via": tenant.link_code, field: value})
        assert expect(response, 400, "field_not_allowed")["error"]["param"] == field
    assert _clicks(runtime) == []


def test_public_capture_answers_the_browser_preflight(client: Client) -> None:
    response = client.request(
        "OPTIONS",
        "/v1/capture",
        headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
    )
    assert response.status_code == 204 and response.content == b""
    assert response.headers["access-control-allow-origin"] == "*"
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "content-type" in response.headers["access-control-allow-headers"].lower()


def test_public_capture_responses_allow_any_origin_even_errors(client: Client, tenant: Tenant) -> None:
    headers = {"Origin": "https://shop.example"}
    ok = client.post("/v1/capture", json={"via": tenant.link_code}, headers=headers)
    assert expect(ok, 201)["livemode"] is True
    assert ok.headers["access-control-allow-origin"] == "*"
    # What may be sent is the preflight's to say (the test above), not every answer's.
    assert "access-control-allow-methods" not in ok.headers
    assert "access-control-max-age" not in ok.headers
    missing = client.post("/v1/capture", json={"via": "no-such-link"}, headers=headers)
    expect(missing, 404, "link_not_found")
    assert missing.headers["access-control-allow-origin"] == "*"
    # Only capture and the join routes are open to browsers.
    assert "access-control-allow-origin" not in client.get("/v1").headers


def test_a_wrong_method_on_capture_still_lets_the_browser_read_the_error(client: Client) -> None:
    """api.md: capture sends Access-Control-Allow-Origin on every response, errors included;
    Starlette's own 405 had none."""
    response = client.get("/v1/capture", headers={"Origin": "https://shop.example"})
    expect(response, 405, "method_not_allowed")
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["allow"] == "OPTIONS, POST"
    assert "access-control-allow-origin" not in client.request("PUT", "/v1/programs").headers


def test_a_configured_origin_is_the_only_one_allowed_and_answers_vary_by_origin(
    runtime: Runtime, settings: Settings
) -> None:
    client = Client(create_app(runtime, evolve(settings, cors_allow_origin="https://shop.example")))
    tenant = new_tenant(client, runtime, "acme")
    ok = client.post(
        "/v1/capture", json={"via": tenant.link_code}, headers={"Origin": "https://shop.example"}
    )
    expect(ok, 201)
    preflight = client.request("OPTIONS", "/v1/capture", headers={"Origin": "https://shop.example"})
    for response in (ok, preflight):
        assert response.headers.get_list("access-control-allow-origin") == ["https://shop.example"]
        assert response.headers.get_list("vary") == ["Origin"]
    assert preflight.headers.get_list("access-control-max-age") == ["86400"]


def test_forwarded_headers_from_an_untrusted_peer_are_ignored(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    headers = {"X-Forwarded-For": "198.51.100.9", "User-Agent": "Spoofer/1"}
    expect(client.post("/v1/capture", json={"via": tenant.link_code}, headers=headers), 201)
    (click,) = _clicks(runtime)
    assert (click.visitor_ip, click.visitor_user_agent) == ("203.0.113.7", "Spoofer/1")  # type: ignore[attr-defined]


def test_a_trusted_proxy_names_the_visitor(runtime: Runtime, settings: Settings) -> None:
    behind_proxy = Client(create_app(runtime, settings), client_address=("10.0.0.5", 40000))
    tenant = new_tenant(behind_proxy, runtime, "acme")
    headers = {"X-Forwarded-For": "192.0.2.1, 198.51.100.9, 10.0.0.6"}
    expect(behind_proxy.post("/v1/capture", json={"via": tenant.link_code}, headers=headers), 201)
    (click,) = _clicks(runtime)
    assert click.visitor_ip == "198.51.100.9"  # type: ignore[attr-defined]


def test_forwarded_for_sent_on_several_lines_is_read_as_one_list_in_order(
    runtime: Runtime, settings: Settings
) -> None:
    """RFC 9110: a header sent on several lines is their values joined in order. A proxy that
    adds a line of its own puts the visitor last; read as its first line alone, the client's own
    line had named the visitor (probe M)."""
    behind_proxy = Client(create_app(runtime, settings), client_address=("10.0.0.5", 40000))
    tenant = new_tenant(behind_proxy, runtime, "acme")
    raw = [(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"198.51.100.9")]
    request = behind_proxy.http.build_request("POST", "/v1/capture", json={"via": tenant.link_code})
    request.headers = httpx.Headers([*request.headers.raw, *raw])
    expect(behind_proxy.http.send(request), 201)
    (click,) = _clicks(runtime)
    assert click.visitor_ip == "198.51.100.9"  # type: ignore[attr-defined]


def test_a_trusted_proxy_seen_on_a_dual_stack_socket_still_names_the_visitor(
    runtime: Runtime, settings: Settings
) -> None:
    """A dual-stack socket (an ASGI server on ``::`` without ``IPV6_V6ONLY``) sees the IPv4 proxy
    10.0.0.5 as ``::ffff:10.0.0.5``. That had matched no IPv4 network of
    ``REFCORE_TRUSTED_PROXIES``, so every visitor was the proxy (and shared its join allowance)."""
    behind_proxy = Client(create_app(runtime, settings), client_address=("::ffff:10.0.0.5", 40000))
    tenant = new_tenant(behind_proxy, runtime, "acme")
    headers = {"X-Forwarded-For": "198.51.100.9"}
    expect(behind_proxy.post("/v1/capture", json={"via": tenant.link_code}, headers=headers), 201)
    (click,) = _clicks(runtime)
    assert click.visitor_ip == "198.51.100.9"  # type: ignore[attr-defined]


def test_a_trusted_proxy_written_in_the_mapped_form_still_matches() -> None:
    """Probe O: peers are matched unmapped, so ``::ffff:10.0.0.0/104`` (a proxy as a dual-stack
    socket's log shows it) had stopped matching ``::ffff:10.0.0.5``; it is read as 10.0.0.0/8."""
    proxies = parse_networks("::ffff:10.0.0.0/104", name="test")
    assert client_ip("::ffff:10.0.0.5", "203.0.113.9", proxies) == "203.0.113.9"
    assert client_ip("10.0.0.5", "203.0.113.9", proxies) == "203.0.113.9"
    assert client_ip("10.1.0.5", "203.0.113.9", parse_networks("::ffff:10.0.0.0/112", name="t")) == "10.1.0.5"


@pytest.mark.parametrize(
    ("peer", "forwarded", "visitor"),
    [
        ("10.0.0.5", None, "10.0.0.5"),
        ("10.0.0.5", "198.51.100.9", "198.51.100.9"),
        ("10.0.0.5", "198.51.100.9, 10.1.1.1", "198.51.100.9"),
        ("10.0.0.5", "10.1.1.1, 10.2.2.2", "10.1.1.1"),
        ("10.0.0.5", "not-an-ip, 10.2.2.2", "10.0.0.5"),
        ("10.0.0.5", "2001:db8::1", "2001:db8::1"),
        ("203.0.113.7", "198.51.100.9", "203.0.113.7"),
        # A dual-stack socket sees an IPv4 proxy in the mapped form; it is still the
        # proxy of 10.0.0.0/8, and every address is kept as IPv4 where it is one.
        ("::ffff:10.0.0.5", "198.51.100.9", "198.51.100.9"),
        ("::ffff:10.0.0.5", None, "10.0.0.5"),
        ("::ffff:203.0.113.7", "198.51.100.9", "203.0.113.7"),
        ("10.0.0.5", "::ffff:198.51.100.9, ::FFFF:10.1.1.1", "198.51.100.9"),
        ("10.0.0.5", "2001:DB8:0::1", "2001:db8::1"),
        ("::ffff:10.0.0.5", "10.1.1.1, 10.2.2.2", "10.1.1.1"),
    ],
)
def test_the_visitor_is_the_first_untrusted_hop_from_the_right(
    peer: str, forwarded: str | None, visitor: str
) -> None:
    assert client_ip(peer, forwarded, parse_networks("10.0.0.0/8", name="test")) == visitor


def test_server_capture_takes_visitor_fields_and_the_key_mode(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    body = {"via": tenant.link_code, "visitor_ip": "198.51.100.4", "visitor_user_agent": "Agent/1"}
    click = expect(client.post("/v1/capture", tenant.test_key, body), 201)
    assert click["livemode"] is False
    (stored,) = _clicks(runtime)
    assert (stored.visitor_ip, stored.visitor_user_agent) == ("198.51.100.4", "Agent/1")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("::ffff:198.51.100.4", "198.51.100.4"),
        ("::FFFF:c633:6404", "198.51.100.4"),
        ("2001:0DB8:0000::0001", "2001:db8::1"),
        ("198.51.100.4", "198.51.100.4"),
    ],
)
def test_a_server_captures_visitor_ip_is_kept_in_one_written_form(
    client: Client, runtime: Runtime, tenant: Tenant, given: str, kept: str
) -> None:
    """An IPv4 visitor is one address whether the App's server saw it on an IPv4 or a dual-stack
    socket: the mapped form is kept as IPv4 (Python 3.11 had written it ``::ffff:c633:6404``)."""
    body = {"via": tenant.link_code, "visitor_ip": given}
    expect(client.post("/v1/capture", tenant.live_key, body), 201)
    (stored,) = _clicks(runtime)
    assert stored.visitor_ip == kept  # type: ignore[attr-defined]


@pytest.mark.parametrize("bad", ["not-an-ip", "198.51.100.256", "198.51.100.4, 10.0.0.1", "::g", ""])
def test_a_server_captures_visitor_ip_must_be_an_ip_address(
    client: Client, runtime: Runtime, tenant: Tenant, bad: str
) -> None:
    """The caller's word for the visitor's address is checked (fuzzing stored ``"not-an-ip"``)."""
    body = {"via": tenant.link_code, "visitor_ip": bad}
    response = client.post("/v1/capture", tenant.live_key, body)
    assert expect(response, 400, "validation_error")["error"]["param"] == "visitor_ip"
    assert _clicks(runtime) == []


def test_a_server_captures_ipv6_visitor_ip_is_kept_in_its_usual_form(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    body = {"via": tenant.link_code, "visitor_ip": "2001:0DB8:0000:0000:0000:0000:0000:0001"}
    expect(client.post("/v1/capture", tenant.live_key, body), 201)
    (stored,) = _clicks(runtime)
    assert stored.visitor_ip == "2001:db8::1"  # type: ignore[attr-defined]


# -- a server capture's key is authenticated with its batch; the answers stay those of the pipeline


def test_a_server_capture_with_a_bad_key_is_401_whatever_else_is_wrong(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    """Interface 5 and decisions 11: the credential is checked first. The key of a server
    capture is looked up with its batch, after the body was checked, so a request that fails
    for another reason has its credential checked before that answer goes out."""
    forged = "key_app_forged"
    expect(client.post("/v1/capture", forged, {"via": tenant.link_code}), 401, "unauthenticated")
    expect(client.post("/v1/capture", forged, {"page": "https://shop.example/"}), 401, "unauthenticated")
    expect(client.post("/v1/capture", forged, {"via": ""}), 401, "unauthenticated")
    expect(client.post("/v1/capture", forged, {"via": "no-such-link"}), 401, "unauthenticated")
    bad_ip = {"via": tenant.link_code, "visitor_ip": "not-an-ip"}
    expect(client.post("/v1/capture", forged, bad_ip), 401, "unauthenticated")
    response = client.post(
        "/v1/capture", forged, content=b"{not json", headers={"Content-Type": "application/json"}
    )
    expect(response, 401, "unauthenticated")
    assert _clicks(runtime) == []


def test_a_server_capture_with_a_credential_that_is_no_app_key_is_403_whatever_else_is_wrong(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    expect(client.post("/v1/capture", tenant.session, {"via": tenant.link_code}), 403, "forbidden")
    expect(client.post("/v1/capture", tenant.session, {"via": ""}), 403, "forbidden")
    expect(client.post("/v1/capture", tenant.session, {"via": "no-such-link"}), 403, "forbidden")
    assert _clicks(runtime) == []


def test_a_server_capture_with_a_good_key_gets_the_answer_of_what_is_wrong(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    expect(
        client.post("/v1/capture", tenant.live_key, {"page": "https://shop.example/"}),
        400,
        "validation_error",
    )
    expect(client.post("/v1/capture", tenant.live_key, {"via": ""}), 400, "validation_error")
    expect(client.post("/v1/capture", tenant.live_key, {"via": "no-such-link"}), 404, "link_not_found")
    expect(
        client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code, "extra": 1}),
        400,
        "validation_error",
    )
    assert _clicks(runtime) == []
    click = expect(client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code}), 201)
    assert click["livemode"] is True


def test_a_server_capture_with_a_revoked_key_is_401(client: Client, runtime: Runtime, tenant: Tenant) -> None:
    keys = expect(client.get("/v1/api-keys", tenant.session, app_id=tenant.app_id), 200)["data"]
    live = next(key for key in keys if key["mode"] == "live")
    expect(client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code}), 201)
    expect(client.delete(f"/v1/api-keys/{live['id']}", tenant.session), 200)
    expect(client.post("/v1/capture", tenant.live_key, {"via": tenant.link_code}), 401, "unauthenticated")
    assert len(_clicks(runtime)) == 1
