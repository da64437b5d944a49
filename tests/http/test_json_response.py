"""JSON answers are rendered by orjson, byte for byte what Starlette's standard encoder wrote."""

from __future__ import annotations

import json
from typing import Any

import httpx
import orjson
import pytest
from starlette.responses import Response

from refcore.services.runtime import Runtime
from refcore_http.json_response import JsonResponse
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
    created = client.post("/v1/organizations", tenant.session, {"name": 'Café ☕ 東京 "quoted" \\'})
    expect(created, 201)
    listed = client.get("/v1/organizations", tenant.session)
    page = client.get("/v1/commissions", tenant.live_key)
    # A name is one line; an agreement's text may hold the control characters JSON escapes.
    text = {"text": 'Terms:\n\t"quoted" \\ \u0001 Café'}
    agreement = client.patch(f"/v1/apps/{tenant.app_id}/agreement", tenant.session, text)
    expect(agreement, 200)
    for response in (created, listed, page, agreement):
        assert response.headers["content-type"] == "application/json"
        assert response.content == _standard_bytes(response)
    assert "Café ☕ 東京".encode() in created.content  # UTF-8 as is, not \\u escapes


def test_error_envelopes_are_rendered_the_same_way(client: Client) -> None:
    response = client.get("/v1/organizations", "sess_unknown")
    expect(response, 401, "unauthenticated")
    assert response.headers["content-type"] == "application/json"
    assert response.content == _standard_bytes(response)


class _StarlettesInit(Response):
    """What Starlette's own ``Response.__init__`` makes of a JSON answer, rendered by orjson."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


_CONTENTS = [{"click_id": "clk_1", "livemode": True}, {"data": [], "has_more": False}]


@pytest.mark.parametrize("status", [200, 201, 400, 404, 429, 500, 101, 204, 304])
@pytest.mark.parametrize("headers", [None, {"Retry-After": "3"}])
@pytest.mark.parametrize("content", _CONTENTS)
def test_a_json_response_has_the_status_body_and_headers_starlette_would_give_it(
    status: int, headers: dict[str, str] | None, content: dict[str, Any]
) -> None:
    ours = JsonResponse(content, status_code=status, headers=headers)
    starlettes = _StarlettesInit(content, status_code=status, headers=headers)
    assert (ours.status_code, ours.body, ours.raw_headers, ours.background) == (
        starlettes.status_code,
        starlettes.body,
        starlettes.raw_headers,
        starlettes.background,
    )
