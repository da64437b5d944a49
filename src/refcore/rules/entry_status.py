"""The status of a ledger entry is derived when read, never stored (decisions 4).

Precedence: ``paid`` (in a completed payout) over ``held`` (a dispute of its payment is open)
over ``pending`` (before ``available_at``) over ``approved``.
"""

from __future__ import annotations

from datetime import datetime

from attrs import frozen

from refcore.models import CommissionEntry, EntryStatus


def entry_status(entry: CommissionEntry, *, now: datetime, payment_held: bool, paid: bool) -> EntryStatus:
    if paid:
        return EntryStatus.PAID
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

    def add(self, status: EntryStatus, amount: int) -> Balance:
        if status is EntryStatus.PENDING:
            return Balance(self.pending + amount, self.held, self.available, self.paid)
        if status is EntryStatus.HELD:
            return Balance(self.pending, self.held + amount, self.available, self.paid)
        if status is EntryStatus.APPROVED:
            return Balance(self.pending, self.held, self.available + amount, self.paid)
        return Balance(self.pending, self.held, self.available, self.paid + amount)
