"""Which events an App's webhook endpoint receives (interface 6.1, decisions 11)."""

from __future__ import annotations

from datetime import datetime

from refcore.models import Event, EventType, WebhookEndpoint

#: Every type an endpoint may subscribe to. ``webhook.test`` is sent only on request, to whoever
#: asked, so it is not in the list and cannot be selected.
SUBSCRIBABLE: tuple[EventType, ...] = tuple(t for t in EventType if t is not EventType.WEBHOOK_TEST)


def subscribed_types(endpoint: WebhookEndpoint) -> tuple[str, ...]:
    """The endpoint's effective selection; an empty stored selection means every subscribable type,
    including types added in later versions."""
    return endpoint.events or tuple(t.value for t in SUBSCRIBABLE)


def should_deliver(endpoint: WebhookEndpoint | None, event: Event) -> bool:
    """Whether an event leads to a request at all; otherwise its outbox entry is simply closed."""
    return takes(endpoint, event.type, event.created_at)


def takes(endpoint: WebhookEndpoint | None, type: EventType, created_at: datetime) -> bool:
    """Whether ``endpoint`` takes an event of ``type`` created at ``created_at``: what
    :func:`should_deliver` decides, for an event not built yet (``Tx.emit`` decides before it
    builds one, rather than building it twice).

    - no endpoint, or a removed one: nothing to send to;
    - events that happened before the endpoint was configured are not replayed into it;
    - ``webhook.test`` goes out even to a disabled endpoint: it is an explicit request to try it;
    - otherwise the endpoint must be enabled and subscribed to the type.
    """
    if endpoint is None or endpoint.deleted_at is not None:
        return False
    if created_at < endpoint.created_at:
        return False
    if type is EventType.WEBHOOK_TEST:
        return True
    return not endpoint.disabled and type.value in subscribed_types(endpoint)
