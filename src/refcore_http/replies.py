"""Shapes shared by many handlers: list envelopes and the activity list query."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from refcore.representation import JsonObject, represent
from refcore.services.activity import ActivityQuery
from refcore_http.endpoints import Call, Reply, ok

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
