"""The envelope for every failure (routing, unexpected exceptions), and the API describing itself."""

from __future__ import annotations

import logging
import re

import attrs
import httpx
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
from tests.http.world import Client, Tenant, expect, new_activity, new_tenant

_SECRET_DETAIL = "password=hunter2 at db.internal:5432"


def _explode(call: Call) -> Reply:
    raise RuntimeError(_SECRET_DETAIL)


def test_an_unknown_path_is_a_not_found_envelope(client: Client) -> None:
    for path in ("/v1/nothing", "/", "/v2/programs", "/v1/programs/prg_x/nothing"):
        body = expect(client.get(path), 404, "not_found")
        assert set(body) == {"error"} and body["error"]["message"]


def test_health_reads_the_store_and_needs_no_credential(client: Client) -> None:
    """The failing case, a database that refuses connections: tests/sqlstore/test_health.py."""
    assert expect(client.get("/v1/health"), 200) == {"object": "health", "store": "ok"}


def test_a_trailing_slash_is_not_redirected(client: Client) -> None:
    expect(client.get("/v1/"), 404, "not_found")
    expect(client.get("/v1/apps/"), 404, "not_found")


def test_a_wrong_method_is_405_naming_the_allowed_ones(client: Client) -> None:
    response = client.request("DELETE", "/v1/programs")
    expect(response, 405, "method_not_allowed")
    assert set(re.split(r",\s*", response.headers["allow"])) >= {"GET", "POST"}
    # Sorted: the same in every server process (Starlette keeps a route's methods in a set).
    assert response.headers["allow"] == ", ".join(sorted(re.split(r",\s*", response.headers["allow"])))
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


def test_a_500_names_the_log_line_it_was_written_to_and_each_has_its_own(
    runtime: Runtime, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """ "It has been logged" left an operator to find a client's failure among the server's lines
    by the minute; the answer names a reference that the one log line carries."""
    boom = Endpoint("GET", "/v1/boom", "Fails", _explode, PUBLIC, returns("Index"))
    client = Client(create_app(runtime, settings, extra=(boom,)))
    references = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="refcore_http"):
            message = expect(client.get("/v1/boom"), 500, "internal_error")["error"]["message"]
        found = re.fullmatch(
            r"An unexpected error occurred; it has been logged as (err_[0-9a-f]{16})", message
        )
        assert found is not None, message
        [record] = [r for r in caplog.records if r.exc_info]
        assert record.getMessage() == f"Unhandled error in GET /v1/boom, logged as {found[1]}"
        references.append(found[1])
    assert references[0] != references[1]


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
    # A session is always 403 live_key_required there: the index does not offer it (probe AK).
    assert auth[("GET", "/v1/payout-executions/:id")] == "live_app_key"
    assert auth[("POST", "/v1/payout-executions/:id/failed")] == "live_app_key"


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
    message = expect(response, 500, "internal_error")["error"]["message"]
    found = re.fullmatch(
        r"The database could not complete the operation \(logged as (err_[0-9a-f]{16})\)", message
    )
    assert found is not None, message
    assert "deadlock" not in response.text
    logged = [r for r in caplog.records if r.exc_info]
    assert (
        logged and logged[0].getMessage() == f"Unhandled error in GET /v1/store-failure, logged as {found[1]}"
    )
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


# -- secrets never appear in messages (probe J) -----------------------------------------------


def _secret_sent_as(client: Client, tenant: Tenant, request: str, value: str) -> httpx.Response:
    """One of the four requests probe J made, with ``value`` where an ID or a code belongs."""
    if request == "delete an api key":
        return client.delete(f"/v1/api-keys/{value}", tenant.session)
    if request == "get an api key":
        return client.get(f"/v1/api-keys/{value}", tenant.session)
    if request == "identify a click":
        return client.post("/v1/identify", tenant.live_key, {"click_id": value, "email": "c@x.io"})
    return client.post("/v1/capture", None, {"via": value})


#: The secret each request pastes, by which credential of the tenant it is, and the ordinary
#: value answered the same way, which the message still quotes.
_ECHO_CASES = [
    ("delete an api key", "live_key", "akey_01nothing", "No such api key: akey_01nothing"),
    ("get an api key", "session", "akey_01nothing", "No such api key: akey_01nothing"),
    ("identify a click", "live_key", "clk_01nothing", "No such click: clk_01nothing"),
    ("capture on a link", "live_key", "no-such-code", "No such link: no-such-code"),
]


@pytest.mark.parametrize(("request_name", "credential", "ordinary", "message"), _ECHO_CASES)
def test_a_secret_sent_as_an_id_or_code_never_appears_in_the_answer(
    client: Client, runtime: Runtime, request_name: str, credential: str, ordinary: str, message: str
) -> None:
    """docs/api.md: secrets never appear in messages. Probe J pasted a key or a session token
    where an ID or a link code belonged and got it back, lower-cased for ``via``; the answer is
    now the one an unknown ID gets, without the value, and an ordinary ID is still quoted."""
    tenant = new_tenant(client, runtime, "acme")
    secret = getattr(tenant, credential)
    plain = _secret_sent_as(client, tenant, request_name, ordinary)
    assert plain.json()["error"]["message"] == message
    for sent in (secret, secret.upper()):
        echoed = _secret_sent_as(client, tenant, request_name, sent)
        assert (echoed.status_code, echoed.json()["error"]["code"]) == (
            plain.status_code,
            plain.json()["error"]["code"],
        )
        assert secret.lower() not in echoed.text.lower()
        # Not even its random part (whole: the text after its last "_" may be one letter).
        assert re.sub(r"^(key_(test_)?app_|sess_)", "", secret).lower() not in echoed.text.lower()
        assert echoed.json()["error"]["message"] == message.partition(":")[0]


def test_a_secret_in_an_unknown_path_or_query_parameter_never_appears_in_the_answer(
    client: Client, runtime: Runtime
) -> None:
    """The no-route message and a query parameter's name quote the URL as the access log does."""
    tenant = new_tenant(client, runtime, "acme")
    secret = tenant.live_key
    body = expect(client.get(f"/v1/nothing/{secret}", tenant.session), 404, "not_found")
    assert body["error"]["message"] == "No route for /v1/nothing/[redacted]"
    response = client.get("/v1/clicks", tenant.live_key, **{secret: "1"})
    body = expect(response, 400, "validation_error")
    assert secret not in response.text and body["error"]["param"] == "[redacted]"
    plain = expect(client.get("/v1/clicks", tenant.live_key, colour="1"), 400, "validation_error")
    assert plain["error"] == {
        "code": "validation_error",
        "message": "Unknown query parameter colour",
        "param": "colour",
    }


def test_messages_and_the_access_log_recognize_credentials_alike() -> None:
    """One recognizer: what the access log writes ``[redacted]`` no message quotes."""
    from refcore import credentials
    from refcore_http import logs

    assert logs.holds_credential is credentials.holds_credential
    assert logs.REDACTED == credentials.REDACTED
    glued = ("xkey_app_x", "zzsess_x", "awhsec_x", "1join_x")  # a stray character before one (probe Q)
    for value in ("key_app_x", "KEY_TEST_APP_x", "sess_x", "join_x", "whsec_x", "Bearer key_aff_x", *glued):
        assert not credentials.quotable(value) and logs.redacted(f"/v1/{value}") == "/v1/[redacted]"
    for value in ("akey_01x", "clk_01x", "acme-ally", "prg_01x", "spring_key_2", "monkey_business"):
        assert credentials.quotable(value) and logs.redacted(f"/v1/{value}") == f"/v1/{value}"


def test_a_credential_glued_to_a_stray_character_is_not_quoted_back(client: Client, runtime: Runtime) -> None:
    """Probe Q: ``GET /v1/clicks/x<key>`` answered ``No such click: x<key>``, and a query
    parameter named ``zz<session>`` came back in ``param``: the recognizer wanted no letter
    before a credential, so that an API key's ID (``akey_…``) stays readable."""
    tenant = new_tenant(client, runtime, "acme")
    for secret in (tenant.live_key, tenant.session):
        sent = [
            client.get(f"/v1/clicks/x{secret}", tenant.live_key),
            client.get("/v1/clicks", tenant.live_key, **{f"zz{secret}": "1"}),
            client.get("/v1/clicks", tenant.live_key, environment=f"a{secret}"),
        ]
        for response in sent:
            assert response.status_code in (400, 404), response.text
            assert secret not in response.text


@pytest.mark.parametrize("credential", ["live_key", "test_key", "session"])
def test_a_secret_sent_as_a_body_member_name_never_appears_in_the_answer(
    client: Client, runtime: Runtime, credential: str
) -> None:
    """Probe K: ``Unknown field <name>`` quoted a member named like a key whole, in the message
    and in ``param``, on every body route. Every error passes one last guard on the way out
    (``refcore.credentials.without_credentials``), whichever message quoted it."""
    tenant = new_tenant(client, runtime, "acme")
    secret = getattr(tenant, credential)
    sent = [
        client.post("/v1/organizations", tenant.session, {"name": "X", secret: 1}),
        client.patch(f"/v1/programs/{tenant.program_id}", tenant.session, {secret: 1}),
        client.post("/v1/identify", tenant.live_key, {"email": "c@x.io", secret: 1}),
        client.request(
            "POST",
            "/v1/capture",
            content=f'{{"via": "x", "{secret}": 1, "{secret}": 2}}',  # a repeated member, too
            headers={"Content-Type": "application/json"},
        ),
    ]
    # The random part whole: the text after the last "_" (as this had checked) is as short as
    # one letter when the random part holds a "_", and "k" is in "Unknown".
    random_part = re.sub(r"^(key_(test_)?app_|sess_)", "", secret)
    assert len(random_part) >= 32
    for response in sent:
        assert response.status_code == 400, response.text
        assert random_part not in response.text
        assert "[redacted]" in response.json()["error"]["message"]


@pytest.mark.parametrize("start", ["key_app_hQT0jWby1kb5", "sess_Ab3dEf6hIj9kLm2n", "whsec_0123456789abc"])
def test_the_start_of_a_secret_sent_as_a_body_member_name_never_appears_either(
    client: Client, runtime: Runtime, start: str
) -> None:
    """Probe F: the last guard recognises a secret by 20 characters after its word, so a member
    named with a secret's first dozen random characters came back in ``Unknown field``, in the
    repeated-member message and in the NUL message. Each of those quotes a name only when
    :func:`refcore.credentials.shown` lets it."""
    tenant = new_tenant(client, runtime, "acme")
    quoted = start.split("_")[-1]  # the random part: shorter than the last guard's 20
    sent = [
        client.post("/v1/organizations", tenant.session, {"name": "X", start: 1}),
        client.post(f"/v1/programs/{tenant.program_id}/pause", tenant.session, {start: 1}),
        client.request(
            "POST",
            "/v1/organizations",
            content=f'{{"name": "X", "{start}": 1, "{start}": 2}}',
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {tenant.session}"},
        ),
        client.request(
            "POST",
            "/v1/organizations",
            content=f'{{"name": "X", "{start}\\u0000": 1}}',
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {tenant.session}"},
        ),
    ]
    for response in sent:
        assert response.status_code == 400, response.text
        assert quoted not in response.text, response.text
        assert response.json()["error"]["param"] == "[redacted]"


def test_a_credential_prefix_named_in_a_message_is_not_taken_for_a_credential() -> None:
    from refcore.credentials import without_credentials

    helpful = "This endpoint needs an affiliate key (key_aff_…); send key_test_app_ keys in Test mode"
    assert without_credentials(helpful) == helpful
    assert without_credentials("field sess_" + "a" * 43 + " is unknown") == "field [redacted] is unknown"
