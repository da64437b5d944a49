"""A member name holding an unpaired surrogate is refused in the envelope, never a ``500``.

JSON's ``\\uXXXX`` escapes can spell half a surrogate pair, which no UTF-8 encoder writes. The
decoder refused such a name, but its refusal quotes the name, and rendering that message failed:
every route with a body answered ``500`` (plain text, outside the envelope, on the literal
paths), the public ones with no credential, and each wrote a traceback to the log (probe H).
"""

from __future__ import annotations

import pytest

from refcore.services.runtime import Runtime
from tests.http.world import Client, Tenant, expect, new_tenant, stored_records


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


BODIES = {
    "a member name": b'{"via": "x", "\\udc00": "x"}',
    "a nested member name": b'{"name": "x", "commission": {"\\udbff": 2}}',
    "a repeated member name": b'{"\\ud800": 1, "\\ud800": 2}',
}


def _routes(client: Client, tenant: Tenant) -> list[tuple[str, str, str | None]]:
    return [
        ("POST", "/v1/capture", None),
        ("POST", "/v1/identify", tenant.test_key),
        ("POST", "/v1/organizations", tenant.session),
        ("POST", "/v1/programs", tenant.session),
        ("PATCH", f"/v1/apps/{tenant.app_id}", tenant.session),
        ("POST", f"/v1/join/{_slug(client, tenant)}", None),
    ]


def _slug(client: Client, tenant: Tenant) -> str:
    program = expect(client.get(f"/v1/programs/{tenant.program_id}", tenant.session), 200)
    return str(program["slug"])


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_a_lone_surrogate_in_a_member_name_is_a_400_in_the_envelope(
    client: Client, runtime: Runtime, tenant: Tenant, body: bytes
) -> None:
    before = stored_records(runtime)
    for method, path, token in _routes(client, tenant):
        response = client.request(
            method, path, token, content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400, (path, response.status_code, response.text)
        error = response.json()["error"]
        assert error["code"] in ("validation_error", "invalid_json"), (path, error)
        assert "\\ud" in error["message"], (path, error)
    assert stored_records(runtime) == before


def test_the_refusal_quotes_the_name_as_the_escape_the_caller_sent(client: Client, tenant: Tenant) -> None:
    response = client.request(
        "POST", "/v1/capture", content=BODIES["a member name"], headers={"Content-Type": "application/json"}
    )
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["param"]) == (400, "validation_error", "\\udc00")
