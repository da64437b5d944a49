"""Reading the App's events back by ID and as a list (decisions 11: every resource with an ID
answers ``GET``).

A receiver holds event IDs (the envelope's ``id``, the ``X-Service-Webhook-Id`` header, a
delivery record's ``event_id``); after a failed delivery it reconciles by fetching the event.
The body is :func:`~refcore.services.webhooks.represent_event`, the envelope the delivery
carried plus ``object``, so what was missed reads exactly as it would have arrived.

Modes follow the delivery history's (:func:`~refcore.services.webhooks.listed_in`): an event
belongs to its ``livemode``, except ``webhook.test``, which either mode's key may send and read
(it is ``livemode: false`` but carries only the endpoint, which both modes share).
"""

from __future__ import annotations

from attrs import frozen

from refcore.errors import ModeMismatch, NotFound
from refcore.identifiers import prefix_of
from refcore.models import Event, EventType, Mode
from refcore.services.access import may_see_app
from refcore.services.activity import resolve_scope
from refcore.services.pagination import Page, not_of_this_list, require_limit
from refcore.services.principal import Principal, Scope
from refcore.services.runtime import Runtime, Tx
from refcore.services.webhooks import listed_in
from refcore.validation import require_choice

EVENT_PREFIX = "whev"


def get_event(rt: Runtime, principal: Principal, event_id: str) -> Event:
    """One event by ID (``GET /v1/events/:id``), as the webhook delivery records are read.

    An App key reads its own App's events of its mode (and ``webhook.test``); the other mode's
    is ``409 mode_mismatch`` (``id``). A session reads either mode's in its organizations' Apps.
    Anything else, another tenant's event included, is ``event_not_found``."""

    def work(tx: Tx) -> Event:
        event = tx.uow.events.get(event_id) if prefix_of(event_id) == EVENT_PREFIX else None
        if event is None or not may_see_app(tx, principal, event.app_id):
            raise NotFound.of("event", event_id)
        if principal.is_app_key and principal.mode is not None and not listed_in(event, principal.mode):
            raise ModeMismatch(
                f"{event_id} is a {'live' if event.livemode else 'test'} mode event "
                f"but the key is {principal.mode.value} mode",
                param="id",
            )
        return event

    return rt.read(work)


@frozen
class EventQuery:
    """What a caller asks of the event list, as sent (strings, unvalidated)."""

    app_id: str | None = None
    environment: str | None = None
    type: str | None = None
    limit: object = None
    starting_after: str | None = None


def list_events(rt: Runtime, principal: Principal, query: EventQuery) -> Page[Event]:
    """The App's events of one mode, newest first (``GET /v1/events``).

    The scope is an activity list's (:func:`~refcore.services.activity.resolve_scope`): App keys
    their App and mode, sessions ``app_id`` (required) and ``environment`` (default ``live``).

    Errors: ``validation_error`` (``app_id``, ``environment``, ``type``, ``limit``),
    ``app_not_found``, ``mode_mismatch``, ``invalid_starting_after``."""
    size = require_limit(query.limit)
    kind = None if query.type is None else require_choice(query.type, EventType, param="type")

    def work(tx: Tx) -> Page[Event]:
        scope = resolve_scope(
            tx, principal, app_id=query.app_id, environment=query.environment, program_id=None
        )
        if query.starting_after is not None:
            _require_cursor(tx, scope, kind, query.starting_after)
        rows: list[Event] = []
        for where in ranges(scope, kind):
            rows += tx.uow.events.page(where, limit=size + 1, before=query.starting_after)
        rows.sort(key=lambda event: event.id, reverse=True)
        return Page(data=rows[:size], has_more=len(rows) > size)

    return rt.read(work)


def ranges(scope: Scope, kind: EventType | None) -> list[dict[str, object]]:
    """The store queries whose union is the list, each one index range of ``events``
    (``(app_id, livemode, id)`` or ``(app_id, livemode, type, id)``, migration 0017).

    A live list without a type filter is two ranges: the live events and the App's
    ``webhook.test`` events (``livemode: false``); their pages are merged by ID."""
    live = scope.mode is Mode.LIVE
    test_events: dict[str, object] = {
        "app_id": scope.app_id,
        "livemode": False,
        "type": EventType.WEBHOOK_TEST,
    }
    if kind is EventType.WEBHOOK_TEST:
        return [test_events]
    if kind is not None:
        return [{"app_id": scope.app_id, "livemode": live, "type": kind}]
    if live:
        return [{"app_id": scope.app_id, "livemode": True}, test_events]
    return [{"app_id": scope.app_id, "livemode": False}]


def _require_cursor(tx: Tx, scope: Scope, kind: EventType | None, starting_after: str) -> None:
    """Errors: ``invalid_starting_after`` unless the cursor is an event this same list shows."""
    cursor = tx.uow.events.get(starting_after) if prefix_of(starting_after) == EVENT_PREFIX else None
    if (
        cursor is None
        or cursor.app_id != scope.app_id
        or not listed_in(cursor, scope.mode)
        or (kind is not None and cursor.type is not kind)
    ):
        raise not_of_this_list()
