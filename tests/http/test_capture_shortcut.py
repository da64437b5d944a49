"""A browser's capture goes past the pipeline (``Endpoint.shortcut``), and nobody can tell.

The shortcut must answer every request exactly as the pipeline does, and store the same click:
a property test sends the same requests, well-formed or not, to an app with the shortcut and
to one without it, over one store, and compares the answers byte for byte (but the new click's
ID) and the clicks they wrote. The other tests show that the shortcut is really taken, and
only for the requests it is meant for.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from attrs import asdict, evolve
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refcore.services.runtime import Runtime
from refcore_http import app as app_module
from refcore_http import dispatch
from refcore_http.app import create_app
from refcore_http.endpoints import APP_KEY, NO_CONTENT, PUBLIC_OR_APP_KEY, Access, Endpoint
from refcore_http.routes import tracking
from refcore_http.settings import Settings
from tests.http.world import Client, Tenant, expect, new_tenant


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


@pytest.fixture
def without_shortcut(runtime: Runtime, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Client:
    """The same API over the same store, with capture's shortcut taken away."""
    routes = tuple(evolve(endpoint, shortcut=None) for endpoint in tracking.ROUTES)
    areas = tuple(routes if area is tracking.ROUTES else area for area in app_module.AREAS)
    with monkeypatch.context() as patch:
        patch.setattr(app_module, "AREAS", areas)
        return Client(create_app(runtime, settings))


def _clicks(runtime: Runtime) -> dict[str, dict[str, Any]]:
    return {click.id: asdict(click) for click in runtime.read(lambda tx: tx.uow.clicks.find_all({}))}


def _texts(tenant_code: str) -> st.SearchStrategy[Any]:
    """Values a capture's fields may hold: the link's code in any case, text of every length
    around the limits, and every other JSON type."""
    return st.one_of(
        st.sampled_from([tenant_code, tenant_code.upper(), f" {tenant_code}", "", "   ", "no-such-link"]),
        st.text(max_size=8),
        st.sampled_from(["x" * 64, "x" * 65, "p" * 2048, "p" * 2049]),
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.lists(st.text(max_size=3), max_size=2),
        st.just({"nested": "object"}),
    )


_FIELDS = ["via", "page", "referrer", "visitor_ip", "visitor_user_agent", "extra"]


@st.composite
def capture_requests(draw: st.DrawFn, code: str) -> dict[str, Any]:
    """One browser-like capture request: mostly well-formed, often wrong in one or two ways."""
    fields = draw(st.lists(st.sampled_from(_FIELDS), unique=True, max_size=2))
    body: dict[str, Any] = {"via": code} if draw(st.integers(0, 4)) else {}
    body.update({name: draw(_texts(code)) for name in fields})
    content = json.dumps(body).encode()
    content = draw(st.sampled_from([content] * 6 + [b"", b"[]", b"{", content[:-1] or b"}"]))
    media = draw(st.sampled_from(["application/json"] * 4 + ["application/vnd.x+json", "text/plain"]))
    headers = {"Content-Type": media, "Origin": "https://shop.example"}
    agent = draw(st.one_of(st.none(), st.text(max_size=10), st.just("a" * 1100)))
    if agent is not None and agent.isprintable() and agent.isascii() and agent.strip() == agent:
        headers["User-Agent"] = agent
    if draw(st.integers(0, 9)) == 0:
        headers["Authorization"] = draw(st.sampled_from(["Bearer no-such-key", "Basic abc", "Bearer"]))
    query = draw(st.sampled_from([None] * 7 + [{"via": code}]))
    return {"content": content, "headers": headers, "params": query}


def _comparable(response: httpx.Response, new_click_id: str | None) -> tuple[int, list[Any], bytes]:
    content = response.content
    if new_click_id is not None:
        content = content.replace(new_click_id.encode(), b"<new click>")
    return response.status_code, sorted(response.headers.multi_items()), content


def _send(client: Client, runtime: Runtime, request: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    before = _clicks(runtime)
    response = client.request("POST", "/v1/capture", **request)
    new = {id_: click for id_, click in _clicks(runtime).items() if id_ not in before}
    written = [{**click, "id": "<new click>"} for click in new.values()]
    return _comparable(response, next(iter(new), None)), written


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_shortcut_answers_every_capture_as_the_pipeline_does(
    client: Client, without_shortcut: Client, runtime: Runtime, tenant: Tenant, data: st.DataObject
) -> None:
    request = data.draw(capture_requests(tenant.link_code))
    assert _send(client, runtime, request) == _send(without_shortcut, runtime, request)


@pytest.fixture
def pipeline_closed(tenant: Tenant, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the tenant is made, any request that reaches the pipeline is answered 500 (an
    unexpected exception)."""

    async def closed(*_: object) -> None:
        raise RuntimeError("the pipeline was entered")

    monkeypatch.setattr(dispatch, "_pipeline", closed)


@pytest.mark.usefixtures("pipeline_closed")
def test_a_browser_capture_never_enters_the_pipeline(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    for body in (
        {"via": tenant.link_code},
        {"via": tenant.link_code.upper(), "page": "https://shop.example/pricing", "referrer": None},
    ):
        assert expect(client.post("/v1/capture", json=body), 201)["livemode"] is True
    assert len(_clicks(runtime)) == 2


@pytest.mark.usefixtures("pipeline_closed")
@pytest.mark.parametrize(
    "request_kw",
    [
        {"json": {"via": "acme-link", "visitor_ip": "198.51.100.1"}},
        {"json": {"via": "acme-link", "extra": 1}},
        {"json": {"via": 5}},
        {"json": {"page": "https://shop.example/"}},
        {"json": {"via": "acme-link"}, "headers": {"Authorization": "Bearer some-key"}},
        {"json": {"via": "acme-link"}, "params": {"via": "acme-link"}},
    ],
    ids=["visitor field", "unknown field", "via not text", "no via", "a credential", "a query"],
)
def test_anything_else_is_handed_to_the_pipeline(
    client: Client, tenant: Tenant, request_kw: dict[str, Any]
) -> None:
    response = client.request("POST", "/v1/capture", **request_kw)
    expect(response, 500, "internal_error")


@pytest.mark.parametrize(
    ("path", "access", "body"),
    [
        ("/v1/capture", APP_KEY, tracking.CaptureBody),
        ("/v1/links/:code/capture", PUBLIC_OR_APP_KEY, tracking.CaptureBody),
        ("/v1/capture", PUBLIC_OR_APP_KEY, None),
    ],
    ids=["a credential needed", "a path parameter", "no JSON body"],
)
def test_a_shortcut_is_refused_where_the_pipeline_reads_something_before_the_body(
    path: str, access: Access, body: type | None
) -> None:
    with pytest.raises(ValueError, match="a shortcut needs"):
        Endpoint(
            "POST",
            path,
            "A capture elsewhere",
            tracking.capture_click,
            access,
            NO_CONTENT,
            body=body,
            shortcut=tracking.browser_capture,
        )


def test_a_look_alike_of_a_code_finds_no_link(client: Client, runtime: Runtime, tenant: Tenant) -> None:
    """U+212A KELVIN SIGN lower-cases to ``k``: it must not stand for the ``k`` of a code, on
    the browser's path, the server's, or when a link is made."""
    path = f"/v1/program-affiliates/{tenant.affiliate_id}/links"
    expect(client.post(path, tenant.session, {"code": "kiwi"}), 201)
    look_alike = "\u212aiwi"
    expect(client.post("/v1/capture", json={"via": look_alike}), 404, "link_not_found")
    expect(client.post("/v1/capture", tenant.live_key, {"via": look_alike}), 404, "link_not_found")
    assert _clicks(runtime) == {}
    expect(client.post(path, tenant.session, {"code": "\u212a\u212a\u212a"}), 400, "validation_error")
