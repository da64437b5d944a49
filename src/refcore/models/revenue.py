"""Revenue: payments, refunds and disputes reported by the App or the processor."""

from __future__ import annotations

import enum
from datetime import datetime

from attrs import frozen

from refcore.models.mode import Mode


class RevenueSource(enum.StrEnum):
    API = "api"
    PROCESSOR = "processor"


@frozen
class Payment:
    """A payment transaction (``txn_``).

    The running totals (``refunded_amount``, ``disputed_amount``, ``lost_amount``,
    ``open_dispute_count``) are maintained under the payment's row lock so that the
    consumption rule can be checked without re-reading every refund and dispute.
    ``commission_amount`` is the commission ``C`` fixed when the payment was recorded.
    """

    id: str
    app_id: str
    mode: Mode
    payment_id: str
    #: ``None`` only for a processor payment that carried no identify metadata: it stays in
    #: history unattributed, with no customer, referral or program (docs/processor.md).
    customer_id: str | None
    program_id: str | None
    referral_id: str | None
    amount: int
    currency: str
    attributed: bool
    commission_amount: int
    available_at: datetime
    source: RevenueSource
    created_at: datetime
    program_affiliate_id: str | None = None
    refunded_amount: int = 0
    #: refunds excluded: disputes currently ``opened`` or ``lost``.
    disputed_amount: int = 0
    lost_amount: int = 0
    open_dispute_count: int = 0

    @property
    def consumed_amount(self) -> int:
        return self.refunded_amount + self.disputed_amount


@frozen
class Refund:
    id: str
    app_id: str
    mode: Mode
    refund_id: str
    payment_id: str
    transaction_id: str
    amount: int
    created_at: datetime


class DisputeStatus(enum.StrEnum):
    OPENED = "opened"
    WON = "won"
    WITHDRAWN = "withdrawn"
    LOST = "lost"
    FUNDS_REINSTATED = "funds_reinstated"


@frozen
class Dispute:
    id: str
    app_id: str
    mode: Mode
    dispute_id: str
    payment_id: str
    transaction_id: str
    status: DisputeStatus
    amount: int
    created_at: datetime
    updated_at: datetime
    #: Reported by the payment processor as an inquiry (a retrieval request: the card issuer
    #: asks, no money has moved) and not, or not yet, as a chargeback. Open, it holds the
    #: commission like any open dispute but consumes none of the payment, so that a refund made
    #: meanwhile is recorded (``refcore.rules.disputes``). Never set by the API.
    inquiry: bool = False
