"""``GET /v1`` and ``GET /v1/openapi.json``: the API describing itself (generated, never hand-kept);
``GET /v1/health``: whether the process can reach its database."""

from __future__ import annotations

from refcore.services.health import check_store
from refcore_http.endpoints import PUBLIC, Call, Endpoint, Reply, ok, returns


def show_index(call: Call) -> Reply:
    return ok(call.api.index)


def show_openapi(call: Call) -> Reply:
    return ok(call.api.openapi)


def show_health(call: Call) -> Reply:
    check_store(call.runtime)
    return ok({"object": "health", "store": "ok"})


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
    Endpoint(
        "GET",
        "/v1/health",
        "Whether this process can read its database (a readiness check)",
        show_health,
        PUBLIC,
        returns("Health"),
        tags=("index",),
        description="Public. 200 once a real read of the store succeeded; 500 internal_error when the "
        "database cannot be reached (GET /v1 answers from memory and does not tell).",
    ),
)
