"""Shapes shared by many handlers: list envelopes, the activity list query, reads by path ID."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from refcore.errors import ModeMismatch
from refcore.representation import JsonObject, represent
from refcore.services.activity import ActivityQuery
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime
from refcore_http.endpoints import Call, Reply, ok

T = TypeVar("T")

#: Query parameters that are not filters of an activity list.
_NOT_FILTERS = frozenset({"app_id", "environment", "limit", "starting_after"})


def list_body(data: Iterable[JsonObject], has_more: bool) -> JsonObject:
    return {"object": "list", "data": list(data), "has_more": has_more}


def listing(page: Any, render: Callable[[Any], JsonObject] = represent) -> Reply:
    """A ``Page`` of models (rendered by ``render``) as ``{"object": "list", "data", "has_more"}``."""
    return ok(list_body((render(item) for item in page.data), page.has_more))


def activity_query(call: Call) -> ActivityQuery:
    """The scope, filters and paging a caller asked of an activity list."""
    return ActivityQuery(
        app_id=call.query.get("app_id"),
        environment=call.query.get("environment"),
        filters={k: v for k, v in call.query.items() if k not in _NOT_FILTERS},
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )


def by_path_id(call: Call, read: Callable[[Runtime, Principal, str], T]) -> T:
    """``read(runtime, who, id)`` for a route reading one object by its path's ``:id``, where an
    ID of the other mode than the key's is ``409 mode_mismatch`` with ``param: "id"``.

    The core names such an ID after the field that carries it in a body or a filter
    (``click_id``, as identify sends it), which is right there; here the caller sent it as
    the path parameter ``id``, and ``param`` must name something the request has."""
    try:
        return read(call.runtime, call.who, call.params["id"])
    except ModeMismatch as mismatch:
        mismatch.param = "id"
        raise
