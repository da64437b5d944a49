"""The App's events read back (decisions 11): ``GET /v1/events/:id`` and ``GET /v1/events``.

A receiver that missed a delivery holds the event's ID; fetching it returns the envelope the
delivery carried (plus ``object``), the same body ``POST …/webhook/test`` answers.
"""

from __future__ import annotations

from refcore.models import EventType
from refcore.services import events
from refcore.services.webhooks import represent_event
from refcore_http.endpoints import (
    APP_ID,
    DEVELOPER,
    ENVIRONMENT,
    PAGING,
    Call,
    Endpoint,
    QueryParam,
    Reply,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import listing

_TYPE = QueryParam("type", "Only events of this type.", enum=tuple(t.value for t in EventType))


def list_events(call: Call) -> Reply:
    query = events.EventQuery(
        app_id=call.query.get("app_id"),
        environment=call.query.get("environment"),
        type=call.query.get("type"),
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(events.list_events(call.runtime, call.who, query), represent_event)


def get_event(call: Call) -> Reply:
    return ok(represent_event(events.get_event(call.runtime, call.who, call.params["id"])))


_TAGS = ("webhooks",)

ROUTES = (
    Endpoint(
        "GET",
        "/v1/events",
        "List the App's events of one mode, newest first",
        list_events,
        DEVELOPER,
        returns_list("Event"),
        query=(APP_ID, ENVIRONMENT, _TYPE, *PAGING),
        description="An App key lists its own mode's events, a session those of `environment` "
        "(default live); `webhook.test` events are listed in both modes.",
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/events/:id",
        "Read one event, as its webhook delivery carried it",
        get_event,
        DEVELOPER,
        returns("Event"),
        description="An event of the other mode is 409 mode_mismatch for an App key; "
        "a session reads either mode's.",
        tags=_TAGS,
    ),
)
