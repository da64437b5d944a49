"""The App's one outgoing webhook endpoint and the record of each delivery attempt."""

from __future__ import annotations

import enum
from datetime import datetime

from attrs import frozen


@frozen
class WebhookEndpoint:
    """One per App. The signing secret is held only encrypted (``secret_ciphertext``)."""

    id: str
    app_id: str
    url: str
    #: Subscribed event types; empty means every subscribable type.
    events: tuple[str, ...]
    disabled: bool
    secret_ciphertext: str
    created_at: datetime
    updated_at: datetime
    #: Set when the App removes its endpoint. The row stays (one per App, a unique key), and
    #: configuring again revives it with a new secret: repositories have no delete.
    deleted_at: datetime | None = None


class DeliveryStatus(enum.StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@frozen
class WebhookDelivery:
    """One attempt to deliver one event, and in which mode's history it is listed.

    Deliveries tell of the events they carried (IDs, types, timing, the receiver's answers), so a
    key reads only its own mode's, as it reads only its own mode's activity. The two flags are
    stored rather than derived from the event so that each mode's history is one index range
    (``app_id``, flag, ``id``): the list is cut into pages by the store, never filtered after.
    """

    id: str
    app_id: str
    event_id: str
    event_type: str
    status: DeliveryStatus
    duration_ms: int
    created_at: datetime
    url: str
    #: Listed in the Test history: the deliveries of ``livemode: false`` events.
    listed_in_test: bool
    #: Listed in the Live history: the deliveries of ``livemode: true`` events. A ``webhook.test``
    #: delivery is listed in both: either mode's key may send it, and it carries only the
    #: endpoint's configuration, which both modes share.
    listed_in_live: bool
    http_status: int | None = None
    error: str | None = None
    #: First 1 KiB of the response body.
    response_body: str | None = None
