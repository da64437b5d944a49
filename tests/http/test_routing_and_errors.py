"""The envelope for every failure (routing, unexpected exceptions), and the API describing itself."""

from __future__ import annotations

import logging
import re

import pytest
from starlette.routing import Route

from refcore.services.runtime import Runtime
from refcore_http import errors as http_errors
from refcore_http.app import all_endpoints, create_app
from refcore_http.endpoints import PUBLIC, Call, Endpoint, Reply, returns
from refcore_http.routes import revenue
from refcore_http.settings import Settings
from tests.http.world import Client, expect, new_activity, new_tenant

_SECRET_DETAIL = "password=hunter2 at db.internal:5432"


def _explode(call: Call) -> Reply:
    raise RuntimeError(_SECRET_DETAIL)


def test_an_unknown_path_is_a_not_found_envelope(client: Client) -> None:
    for path in ("/v1/nothing", "/", "/v2/programs", "/v1/programs/prg_x/nothing"):
        body = expect(client.get(path), 404, "not_found")
        assert set(body) == {"error"} and body["error"]["message"]


def test_a_trailing_slash_is_not_redirected(client: Client) -> None:
    expect(client.get("/v1/"), 404, "not_found")
    expect(client.get("/v1/apps/"), 404, "not_found")


def test_a_wrong_method_is_405_naming_the_allowed_ones(client: Client) -> None:
    response = client.request("DELETE", "/v1/programs")
    expect(response, 405, "method_not_allowed")
    assert set(re.split(r",\s*", response.headers["allow"])) >= {"GET", "POST"}
    response = client.request("PUT", "/v1/transactions/refunds")
    expect(response, 405, "method_not_allowed")
    expect(client.request("PATCH", "/v1/transactions/txn_1"), 405, "method_not_allowed")


def test_an_unexpected_exception_is_a_500_without_internals(
    runtime: Runtime, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    boom = Endpoint("GET", "/v1/boom", "Fails", _explode, PUBLIC, returns("Index"))
    client = Client(create_app(runtime, settings, extra=(boom,)))
    with caplog.at_level(logging.ERROR, logger="refcore_http"):
        response = client.get("/v1/boom")
    body = expect(response, 500, "internal_error")
    assert "hunter2" not in response.text and "RuntimeError" not in response.text
    assert "Traceback" not in response.text and set(body["error"]) == {"code", "message"}
    assert any("hunter2" in (r.exc_text or "") or r.exc_info for r in caplog.records)  # logged, not sent


def test_a_failing_service_is_a_500_and_nothing_more(
    client: Client, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = new_tenant(client, runtime, "acme")

    def failing(*args: object, **kwargs: object) -> object:
        raise KeyError(_SECRET_DETAIL)

    monkeypatch.setattr(revenue, "record_payment", failing)
    body = {"payment_id": "p", "customer_id": "rcus_x", "program_id": "prg_x", "amount": 1, "currency": "usd"}
    response = client.post("/v1/transactions", tenant.live_key, body)
    expect(response, 500, "internal_error")
    assert "hunter2" not in response.text


def test_every_error_kind_has_one_status() -> None:
    from refcore.errors import CATALOG, ErrorKind

    assert set(http_errors.STATUS_OF_KIND) == set(ErrorKind)
    statuses = {code: http_errors.STATUS_OF_KIND[kind] for code, kind in CATALOG.items()}
    assert statuses["invalid_json"] == 400 and statuses["mode_mismatch"] == 409
    assert statuses["body_too_large"] == 413 and statuses["internal_error"] == 500


def test_the_index_lists_exactly_the_routes_the_server_answers(client: Client) -> None:
    index = expect(client.get("/v1"), 200)
    assert (index["object"], index["version"]) == ("index", "v1")
    listed = {(e["method"], e["path"]) for e in index["endpoints"]}
    assert listed == {(e.method, e.path) for e in all_endpoints()}
    app = client.http.app
    routed = {
        (method, re.sub(r"\{(\w+)\}", r":\1", route.path))
        for route in app.routes  # type: ignore[attr-defined]
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    assert routed == listed
    for entry in index["endpoints"]:
        path = re.sub(r":\w+", "x_1", entry["path"])
        response = client.request(entry["method"], path)
        assert response.status_code != 405, entry
        if response.status_code == 404:
            assert response.json()["error"]["code"] != "not_found", entry  # a resource, not the route


def test_the_index_says_which_credential_each_endpoint_takes(client: Client) -> None:
    auth = {(e["method"], e["path"]): e["auth"] for e in expect(client.get("/v1"), 200)["endpoints"]}
    assert auth[("GET", "/v1")] == "none"
    assert auth[("GET", "/v1/openapi.json")] == "none"
    assert auth[("POST", "/v1/capture")] == "none_or_app_key"
    assert auth[("POST", "/v1/organizations")] == "session"
    assert auth[("POST", "/v1/transactions")] == "app_key"
    assert auth[("GET", "/v1/commissions")] == "session_or_app_key"


def test_the_openapi_document_is_generated_from_the_same_endpoints(client: Client) -> None:
    document = expect(client.get("/v1/openapi.json"), 200)
    assert document["openapi"] == "3.1.0"
    operations = {
        (method.upper(), re.sub(r"\{(\w+)\}", r":\1", path))
        for path, item in document["paths"].items()
        for method in item
    }
    assert operations == {(e.method, e.path) for e in all_endpoints()}
    payment = document["paths"]["/v1/transactions"]["post"]
    schema_name = payment["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    schema = document["components"]["schemas"][schema_name]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"payment_id", "customer_id", "program_id", "amount", "currency"}
    assert schema["properties"]["amount"] == {
        "type": "integer",
        "description": "Minor units; a signed 32-bit integer, >= 0",
        "minimum": 0,
        "maximum": 2**31 - 1,
    }
    assert set(payment["responses"]) >= {"200", "201", "400", "401", "403", "409", "413", "default"}
    assert document["paths"]["/v1"]["get"]["security"] == []
    assert document["paths"]["/v1/capture"]["post"]["security"] == [{}, {"bearer": []}]


def test_responses_carry_json_and_lists_the_list_envelope(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "acme")
    new_activity(client, tenant, tenant.live_key, "1")
    response = client.get("/v1/transactions", tenant.live_key)
    assert response.headers["content-type"].startswith("application/json")
    body = expect(response, 200)
    assert set(body) == {"object", "data", "has_more"} and body["object"] == "list"
