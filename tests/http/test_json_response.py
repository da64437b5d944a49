"""JSON answers are rendered by orjson, byte for byte what Starlette's standard encoder wrote."""

from __future__ import annotations

import json

import httpx

from refcore.services.runtime import Runtime
from tests.http.world import Client, expect, new_tenant


def _standard_bytes(response: httpx.Response) -> bytes:
    """What ``starlette.responses.JSONResponse`` renders for the same body."""
    return json.dumps(
        response.json(), ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


def test_answers_are_compact_utf_8_json_in_the_standard_encoders_exact_bytes(
    client: Client, runtime: Runtime
) -> None:
    tenant = new_tenant(client, runtime, "bytes")
    created = client.post("/v1/organizations", tenant.session, {"name": 'Café ☕ 東京 "quoted" \\ \n'})
    expect(created, 201)
    listed = client.get("/v1/organizations", tenant.session)
    page = client.get("/v1/commissions", tenant.live_key)
    for response in (created, listed, page):
        assert response.headers["content-type"] == "application/json"
        assert response.content == _standard_bytes(response)
    assert "Café ☕ 東京".encode() in created.content  # UTF-8 as is, not \\u escapes


def test_error_envelopes_are_rendered_the_same_way(client: Client) -> None:
    response = client.get("/v1/organizations", "sess_unknown")
    expect(response, 401, "unauthenticated")
    assert response.headers["content-type"] == "application/json"
    assert response.content == _standard_bytes(response)
