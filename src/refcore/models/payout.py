"""Payouts: what an affiliate is paid, recorded only, never moved (interface 3.2, decisions 5).

A payout is a :class:`PayoutExecution` with one :class:`PayoutItem` per commission entry it pays.
The ledger itself is never touched: whether an entry is paid is derived from the items that
point at it. "Paid at most once" is a unique key, not a check: an item holds its entry in
``active_entry_id`` while its execution is live or succeeded, and every store refuses two items
with the same ``active_entry_id`` (a failed execution sets it to ``None``, and ``NULL`` never
clashes, which releases the entry for a later payout).
"""

from __future__ import annotations

import enum
from datetime import datetime

from attrs import frozen


class PayoutMethod(enum.StrEnum):
    PAYPAL = "paypal"
    BANK_TRANSFER = "bank_transfer"
    OTHER = "other"


@frozen
class PayoutDetails:
    """Where an affiliate wants to be paid: one record per program affiliate (``pdt_``).

    A small fixed set of text fields rather than free-form JSON, so that the CSV export has
    stable columns and every field is validated: ``paypal`` needs ``email``, ``bank_transfer``
    needs ``account_holder`` and ``iban``, ``other`` needs ``notes``.
    """

    id: str
    app_id: str
    program_id: str
    program_affiliate_id: str
    method: PayoutMethod
    created_at: datetime
    updated_at: datetime
    email: str | None = None
    account_holder: str | None = None
    iban: str | None = None
    notes: str | None = None


class PayoutRequestStatus(enum.StrEnum):
    OPEN = "open"
    DECLINED = "declined"
    PAID = "paid"


@frozen
class PayoutRequest:
    """An affiliate asking to be paid their available balance (``preq_``).

    A request moves no money and freezes nothing: it is a signal to the Developer, closed by
    ``decline`` or by the affiliate's next succeeded payout.
    """

    id: str
    app_id: str
    program_id: str
    program_affiliate_id: str
    amount: int
    currency: str
    status: PayoutRequestStatus
    created_at: datetime
    decided_at: datetime | None = None
    #: The payout that closed an ``open`` request as ``paid``.
    payout_execution_id: str | None = None
    #: ``program_affiliate_id`` while the request is open, ``None`` after: a unique key on it
    #: allows one open request per affiliate on every store.
    open_program_affiliate_id: str | None = None


class PayoutBatchStatus(enum.StrEnum):
    PREPARED = "prepared"
    DISPATCHED = "dispatched"
    #: Canceled before dispatch: its money is available again and nothing was announced.
    CANCELED = "canceled"


@frozen
class PayoutBatch:
    """The ready payouts of one program at one moment, one execution per affiliate (``pbt_``)."""

    id: str
    app_id: str
    program_id: str
    status: PayoutBatchStatus
    total: int
    currency: str
    execution_count: int
    created_at: datetime
    dispatched_at: datetime | None = None
    canceled_at: datetime | None = None


class PayoutExecutionStatus(enum.StrEnum):
    PREPARED = "prepared"
    READY = "ready"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    #: Its batch was canceled before dispatch: its entries are released, as by ``failed``, but
    #: no payout system ever heard of it, so no event says so.
    CANCELED = "canceled"

    @property
    def live(self) -> bool:
        """Its entries are frozen: neither available nor paid yet."""
        return self in (PayoutExecutionStatus.PREPARED, PayoutExecutionStatus.READY)


@frozen
class PayoutExecution:
    """One payout to one affiliate (``pex_``): from a batch, or recorded by mark-paid.

    ``amount`` is the sum of its items and is always positive.
    """

    id: str
    app_id: str
    program_id: str
    program_affiliate_id: str
    amount: int
    currency: str
    status: PayoutExecutionStatus
    created_at: datetime
    #: ``None`` for a payout recorded by mark-paid outside any batch.
    batch_id: str | None = None
    completed_at: datetime | None = None
    #: The ``Idempotency-Key`` of the report that finished it; ``None`` when completed by hand.
    idempotency_key: str | None = None
    #: ``True`` when mark-paid completed it.
    completed_manually: bool = False
    #: Optional text the external system sent with its report (a transfer reference, a reason).
    outcome_reason: str | None = None
    #: ``program_affiliate_id`` while the execution is prepared or ready, ``None`` after: a unique
    #: key on it keeps one payout in flight per affiliate, so a second batch cannot overlap a
    #: payout that has not been settled yet.
    live_program_affiliate_id: str | None = None


@frozen
class PayoutReportKey:
    """The ``Idempotency-Key`` an App reported one payout execution's outcome with.

    The interface asks for a unique key per report. Every store keeps ``(app_id,
    idempotency_key)`` unique, so a key already spent on one execution is refused on another
    (``idempotency_conflict``) rather than taken as a new report: a script that sends a constant
    or recycled key learns of it at once, instead of settling payouts under one key that no
    longer tells its reports apart. The record is keyed by the execution (``id`` is the
    execution's ID): an execution is settled by at most one report.
    """

    #: The payout execution's ID (``pex_``).
    id: str
    app_id: str
    idempotency_key: str
    created_at: datetime


@frozen
class PayoutItem:
    """One commission entry inside one execution (``pit_``); the entry's amount at the time."""

    id: str
    app_id: str
    execution_id: str
    entry_id: str
    program_affiliate_id: str
    amount: int
    created_at: datetime
    #: ``entry_id`` while the execution is prepared, ready or succeeded; ``None`` once it failed.
    #: Unique on every store: an entry is in at most one live or paid payout.
    active_entry_id: str | None = None
