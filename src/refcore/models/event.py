"""Lifecycle events, written to the outbox in the unit of work that caused them."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from attrs import field, frozen


class EventType(enum.StrEnum):
    AFFILIATE_CREATED = "affiliate.created"
    AFFILIATE_APPROVED = "affiliate.approved"
    AFFILIATE_DISABLED = "affiliate.disabled"
    REFERRAL_CREATED = "referral.created"
    TRANSACTION_CREATED = "transaction.created"
    TRANSACTION_REFUNDED = "transaction.refunded"
    COMMISSION_CREATED = "commission.created"
    COMMISSION_REVERSED = "commission.reversed"
    COMMISSION_PAID = "commission.paid"
    PAYOUT_READY = "payout.ready"
    PAYOUT_SUCCEEDED = "payout.succeeded"
    PAYOUT_FAILED = "payout.failed"
    WEBHOOK_TEST = "webhook.test"


def _frozen_data(value: dict[str, Any]) -> dict[str, Any]:
    return dict(value)


@frozen
class Event:
    id: str
    app_id: str
    type: EventType
    livemode: bool
    created_at: datetime
    #: Snapshot of the affected resource in its public representation; ``data["id"]`` names it.
    data: dict[str, Any] = field(converter=_frozen_data, hash=False)
    #: Set when a dispatcher claims the event for its single delivery attempt.
    claimed_at: datetime | None = None
    #: Set once the attempt has been recorded (whatever its outcome).
    delivered_at: datetime | None = None
