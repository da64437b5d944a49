"""The envelope for every failure (routing, unexpected exceptions), and the API describing itself."""

from __future__ import annotations

import logging
import re

import attrs
import pytest
from starlette.routing import Route

from refcore.errors import InternalError
from refcore.services.runtime import Runtime
from refcore_http import errors as http_errors
from refcore_http.app import all_endpoints, create_app, describe
from refcore_http.endpoints import PUBLIC, Call, Endpoint, Reply, returns
from refcore_http.routes import revenue
from refcore_http.schemas import body_schema
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


def _store_failure(call: Call) -> Reply:
    try:
        raise RuntimeError("relation commission_entries: deadlock on index page 7")
    except RuntimeError as cause:
        raise InternalError("The database could not complete the operation") from cause


def test_an_internal_error_a_store_raises_is_logged_with_its_cause(
    runtime: Runtime, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """The store answers its own failures as ``internal_error`` (``database_errors``); the client
    sees the catalog message only, and the log gets the cause, as for any other 500."""
    failing = Endpoint("GET", "/v1/store-failure", "Fails", _store_failure, PUBLIC, returns("Index"))
    client = Client(create_app(runtime, settings, extra=(failing,)))
    with caplog.at_level(logging.ERROR, logger="refcore_http"):
        response = client.get("/v1/store-failure")
    assert (
        expect(response, 500, "internal_error")["error"]["message"]
        == "The database could not complete the operation"
    )
    assert "deadlock" not in response.text
    logged = [r for r in caplog.records if r.exc_info]
    assert logged and "/v1/store-failure" in logged[0].getMessage()
    assert "deadlock on index page 7" in caplog.text


def test_every_request_schema_names_one_class_so_payout_bodies_are_program_scopes() -> None:
    """Two request classes were both named ``ProgramBody``, and the payout routes' ``{program_id}``
    body was documented as the program-creation body (schemathesis found it)."""
    api = describe(all_endpoints())
    for path in ("/v1/payout-batches", "/v1/payout-requests", "/v1/ready-payouts/csv"):
        schema = api.openapi["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        target = api.openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        assert target["required"] == ["program_id"] and set(target["properties"]) == {"program_id"}, path

    @attrs.frozen
    class ProgramBody:  # the name of the program-creation body, for another class
        other: str

    with pytest.raises(ValueError, match="two request classes are named ProgramBody"):
        body_schema(ProgramBody, {})


def test_headers_a_handler_requires_are_declared_in_the_document() -> None:
    """A client generated from the document must know to send them (schemathesis did not)."""
    paths = describe(all_endpoints()).openapi["paths"]

    def required_headers(path: str) -> list[str]:
        parameters = paths[path]["post"]["parameters"]
        return [p["name"] for p in parameters if p["in"] == "header" and p["required"]]

    assert required_headers("/v1/payout-executions/{id}/succeeded") == ["Idempotency-Key"]
    assert required_headers("/v1/payout-executions/{id}/failed") == ["Idempotency-Key"]
    assert required_headers("/v1/processor/events") == ["Stripe-Signature"]
    statuses = [
        p["schema"] for p in paths["/v1/transactions/disputes"]["get"]["parameters"] if p["name"] == "status"
    ]
    assert statuses == [
        {"type": "string", "enum": ["opened", "won", "withdrawn", "lost", "funds_reinstated"]}
    ]
