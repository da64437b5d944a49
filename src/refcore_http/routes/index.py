"""``GET /v1`` and ``GET /v1/openapi.json``: the API describing itself (generated, never hand-kept)."""

from __future__ import annotations

from refcore_http.endpoints import PUBLIC, Call, Endpoint, Reply, ok, returns


def show_index(call: Call) -> Reply:
    return ok(call.api.index)


def show_openapi(call: Call) -> Reply:
    return ok(call.api.openapi)


ROUTES = (
    Endpoint(
        "GET", "/v1", "The index of every endpoint", show_index, PUBLIC, returns("Index"), tags=("index",)
    ),
    Endpoint(
        "GET",
        "/v1/openapi.json",
        "The OpenAPI 3.1 document of this API",
        show_openapi,
        PUBLIC,
        returns("OpenApiDocument"),
        tags=("index",),
    ),
)
