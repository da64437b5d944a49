"""The endpoint index (``GET /v1``) and the OpenAPI 3.1 document (``GET /v1/openapi.json``).

Both are generated from the same :class:`~refcore_http.endpoints.Endpoint` definitions that build
the routes, so neither can list an endpoint the server does not answer, or miss one it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import refcore
from refcore.representation import JsonObject
from refcore.services.principal import PrincipalKind
from refcore_http.endpoints import Endpoint, Output
from refcore_http.schemas import INTEGER, OBJECTS, body_schema, list_of, ref

_STATUS_TEXT = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No content",
    304: "Not modified: the ETag sent in If-None-Match is current; no body",
    400: "Invalid input (invalid_json, validation_error, field_not_allowed, …)",
    401: "Missing, unknown or revoked credential (unauthenticated)",
    403: "The credential may not call this endpoint",
    404: "No such object, or it belongs to another tenant",
    405: "The path exists, the method does not (method_not_allowed); Allow lists the methods",
    409: "Conflict with the stored state (for a read: mode_mismatch)",
    413: "Body over 1 MiB (body_too_large)",
    429: "Too many requests (rate_limited); Retry-After says when to try again",
    500: "Unexpected failure (internal_error); the details are in the server log only",
}
#: Credentials that hold a mode: with one, a read of the other mode's activity is ``409``.
_MODE_KINDS = frozenset({PrincipalKind.APP_KEY, PrincipalKind.MANAGED_KEY})
_RETRY_AFTER: JsonObject = {"description": "Whole seconds until the window ends", "schema": INTEGER}
#: Described once, in ``components``: a method that a path does not have is no operation of it.
_SHARED_RESPONSES: JsonObject = {
    "MethodNotAllowed": {
        "description": _STATUS_TEXT[405],
        "headers": {"Allow": {"description": "The methods of the path", "schema": {"type": "string"}}},
        "content": {"application/json": {"schema": ref("Error")}},
    }
}


def build_index(endpoints: Sequence[Endpoint]) -> JsonObject:
    """Decisions 11: ``{"object": "index", "version": "v1", "endpoints": [{method, path, auth,
    summary}]}``."""
    return {
        "object": "index",
        "version": "v1",
        "endpoints": [
            {"method": e.method, "path": e.path, "auth": e.access.name, "summary": e.summary}
            for e in endpoints
        ],
    }


def _error_statuses(endpoint: Endpoint) -> list[int]:
    """The errors an endpoint of this kind may answer; ``500`` is every endpoint's."""
    statuses = [400]
    if not endpoint.access.ignored:
        statuses.append(401)
        if endpoint.access.kinds:
            statuses.append(403)
    names_something = endpoint.path_params or endpoint.query
    if names_something or endpoint.body is not None or endpoint.raw_body:
        statuses.append(404)
    if endpoint.method in ("POST", "PATCH", "PUT", "DELETE"):
        statuses += [409, 413]
    elif names_something and endpoint.access.kinds & _MODE_KINDS:
        statuses.append(409)  # an ID or environment of the other mode than the key's
    statuses += endpoint.output.errors
    return sorted({*statuses, 500})


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
    operation: JsonObject = {
        "operationId": endpoint.operation_id,
        "summary": endpoint.summary,
        "tags": list(endpoint.tags),
        "security": _security(endpoint),
        "x-refcore-auth": endpoint.access.name,
        "responses": _responses(endpoint),
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
            "required": not endpoint.body_optional,
            "content": {"application/json": {"schema": body_schema(endpoint.body, definitions)}},
        }
    return operation


def _responses(endpoint: Endpoint) -> dict[str, Any]:
    responses = {str(status): _success(endpoint.output, status) for status in endpoint.output.statuses}
    error_content = {"application/json": {"schema": ref("Error")}}
    for status in _error_statuses(endpoint):
        responses[str(status)] = {"description": _STATUS_TEXT[status], "content": error_content}
        if status == 429:
            responses[str(status)]["headers"] = {"Retry-After": _RETRY_AFTER}
    responses["default"] = {"description": "Any other error, in the same envelope", "content": error_content}
    return responses


def _success(output: Output, status: int) -> JsonObject:
    """One success status of ``output``: its body's media type and schema (none for ``304``)."""
    described: JsonObject = {"description": _STATUS_TEXT.get(status, "OK")}
    if status == 304:
        return described
    if output.media_type is not None:
        return {**described, "content": {output.media_type: {"schema": {"type": "string"}}}}
    name = dict(output.schemas).get(status, output.schema)
    if name is None:
        return described
    schema = list_of(name) if output.many else ref(name)
    return {**described, "content": {"application/json": {"schema": schema}}}


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
            "responses": _SHARED_RESPONSES,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A dashboard session (sess_…) or an API key (key_…)",
                }
            },
        },
    }
