"""Commission ledger entries: append-only, signed amounts, status derived when read."""

from __future__ import annotations

import enum
from datetime import datetime

from attrs import evolve, frozen

from refcore.models.mode import Mode


class EntryKind(enum.StrEnum):
    EARNED = "earned"
    REVERSAL = "reversal"
    REINSTATEMENT = "reinstatement"


class EntryStatus(enum.StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    HELD = "held"
    PAID = "paid"
    #: Frozen in a payout that is prepared or ready: neither available nor paid yet.
    PROCESSING = "processing"


@frozen
class CommissionEntry:
    id: str
    app_id: str
    mode: Mode
    program_id: str
    program_affiliate_id: str
    #: Always the payment's ``txn_``.
    transaction_id: str
    #: The payment, refund (``txn_``) or dispute (``dsp_``) that caused this entry.
    source_id: str
    kind: EntryKind
    amount: int
    currency: str
    #: Every entry of a payment shares the payment's ``available_at``, so a reversal can never
    #: become payable before the earning it reverses.
    available_at: datetime
    created_at: datetime


@frozen
class Balance:
    """Sums of a program affiliate's entries by status; ``available`` is net of negatives."""

    pending: int = 0
    held: int = 0
    available: int = 0
    paid: int = 0
    #: Frozen in a payout that is prepared or ready (not yet reported).
    processing: int = 0

    def add(self, status: EntryStatus, amount: int) -> Balance:
        if status is EntryStatus.PENDING:
            return evolve(self, pending=self.pending + amount)
        if status is EntryStatus.HELD:
            return evolve(self, held=self.held + amount)
        if status is EntryStatus.APPROVED:
            return evolve(self, available=self.available + amount)
        if status is EntryStatus.PROCESSING:
            return evolve(self, processing=self.processing + amount)
        return evolve(self, paid=self.paid + amount)
