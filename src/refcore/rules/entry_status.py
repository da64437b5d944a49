"""The status of a ledger entry is derived when read, never stored (decisions 4).

Precedence: ``paid`` (in a completed payout) over ``processing`` (frozen in a payout that is
prepared or ready) over ``held`` (a dispute of its payment is open) over ``pending`` (before
``available_at``) over ``approved``.
"""

from __future__ import annotations

from datetime import datetime

from attrs import evolve, frozen

from refcore.models import CommissionEntry, EntryStatus


def entry_status(
    entry: CommissionEntry, *, now: datetime, payment_held: bool, paid: bool, processing: bool = False
) -> EntryStatus:
    if paid:
        return EntryStatus.PAID
    if processing:
        return EntryStatus.PROCESSING
    if payment_held:
        return EntryStatus.HELD
    if now < entry.available_at:
        return EntryStatus.PENDING
    return EntryStatus.APPROVED


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
