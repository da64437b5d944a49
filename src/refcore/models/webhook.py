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
    id: str
    app_id: str
    event_id: str
    event_type: str
    status: DeliveryStatus
    duration_ms: int
    created_at: datetime
    url: str
    http_status: int | None = None
    error: str | None = None
    #: First 1 KiB of the response body.
    response_body: str | None = None
