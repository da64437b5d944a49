"""The endpoint index (``GET /v1``) and the OpenAPI 3.1 document (``GET /v1/openapi.json``).

Both are generated from the same :class:`~refcore_http.endpoints.Endpoint` definitions that build
the routes, so neither can list an endpoint the server does not answer, or miss one it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import refcore
from refcore.representation import JsonObject
from refcore_http.endpoints import Endpoint
from refcore_http.schemas import OBJECTS, body_schema, list_of, ref

_STATUS_TEXT = {
    200: "OK",
    201: "Created",
    204: "No content",
    400: "Invalid input (invalid_json, validation_error, field_not_allowed, …)",
    401: "Missing, unknown or revoked credential (unauthenticated)",
    403: "The credential may not call this endpoint",
    404: "No such object, or it belongs to another tenant",
    409: "Conflict with the stored state",
    413: "Body over 1 MiB (body_too_large)",
}


def build_index(endpoints: Sequence[Endpoint]) -> JsonObject:
    """Decisions 11: ``{"object": "index", "version": "v1", "endpoints": [{method, path, auth}]}``."""
    return {
        "object": "index",
        "version": "v1",
        "endpoints": [
            {"method": e.method, "path": e.path, "auth": e.access.name, "summary": e.summary}
            for e in endpoints
        ],
    }


def _error_statuses(endpoint: Endpoint) -> list[int]:
    statuses = [400]
    if not endpoint.access.ignored:
        statuses.append(401)
        if endpoint.access.kinds:
            statuses.append(403)
    if endpoint.path_params or endpoint.body is not None or endpoint.query or endpoint.raw_body:
        statuses.append(404)
    if endpoint.method in ("POST", "PATCH", "PUT", "DELETE"):
        statuses += [409, 413]
    return statuses


def _security(endpoint: Endpoint) -> list[JsonObject]:
    if endpoint.access.ignored:
        return []
    if endpoint.access.optional:
        return [{}, {"bearer": []}]
    return [{"bearer": []}]


def _operation(endpoint: Endpoint, definitions: dict[str, JsonObject]) -> JsonObject:
    parameters: list[JsonObject] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in endpoint.path_params
    ]
    parameters += [
        {
            "name": q.name,
            "in": "query",
            "required": q.required,
            "description": q.description,
            "schema": q.schema(),
        }
        for q in endpoint.query
    ]
    parameters += [
        {
            "name": h.name,
            "in": "header",
            "required": h.required,
            "description": h.description,
            "schema": {"type": "string", "minLength": 1},
        }
        for h in endpoint.headers
    ]
    responses: dict[str, Any] = {}
    output = endpoint.output
    for status in output.statuses:
        if output.media_type is not None:
            responses[str(status)] = {
                "description": _STATUS_TEXT.get(status, "OK"),
                "content": {output.media_type: {"schema": {"type": "string"}}},
            }
            continue
        if output.schema is None:
            responses[str(status)] = {"description": _STATUS_TEXT.get(status, "OK")}
            continue
        schema = list_of(output.schema) if output.many else ref(output.schema)
        responses[str(status)] = {
            "description": _STATUS_TEXT.get(status, "OK"),
            "content": {"application/json": {"schema": schema}},
        }
    error_content = {"application/json": {"schema": ref("Error")}}
    for status in _error_statuses(endpoint):
        responses[str(status)] = {"description": _STATUS_TEXT[status], "content": error_content}
    responses["default"] = {"description": "Any other error, in the same envelope", "content": error_content}
    operation: JsonObject = {
        "operationId": endpoint.operation_id,
        "summary": endpoint.summary,
        "tags": list(endpoint.tags),
        "security": _security(endpoint),
        "x-refcore-auth": endpoint.access.name,
        "responses": responses,
    }
    if endpoint.description:
        operation["description"] = endpoint.description
    if parameters:
        operation["parameters"] = parameters
    if endpoint.raw_body:
        content: JsonObject = {"application/json": {"schema": {"type": "object"}}}
        if endpoint.raw_media_types:
            binary = {"schema": {"type": "string", "format": "binary"}}
            content = {media_type: binary for media_type in endpoint.raw_media_types}
        operation["requestBody"] = {"required": True, "content": content}
    if endpoint.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body_schema(endpoint.body, definitions)}},
        }
    return operation


def build_openapi(endpoints: Sequence[Endpoint]) -> JsonObject:
    definitions: dict[str, JsonObject] = {}
    paths: dict[str, dict[str, JsonObject]] = {}
    for endpoint in endpoints:
        paths.setdefault(endpoint.starlette_path, {})[endpoint.method.lower()] = _operation(
            endpoint, definitions
        )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "refcore",
            "version": refcore.__version__,
            "description": "Referral tracking and affiliate commissions. See docs/api.md.",
        },
        "paths": paths,
        "components": {
            "schemas": {**OBJECTS, **definitions},
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A dashboard session (sess_…) or an API key (key_…)",
                }
            },
        },
    }
