"""The status of a ledger entry is derived when read, never stored (decisions 4).

Precedence: ``paid`` (in a completed payout) over ``processing`` (frozen in a payout that is
prepared or ready) over ``held`` (a dispute of its payment is open, and the entry is positive) over
``pending`` (before ``available_at``) over ``approved``.

**A reversal is never held** (an improvement on decisions 4, which held every entry of a disputed
payment). Holding keeps back commission a dispute may take away; a reversal takes money back, and
holding it raised the available balance when a dispute opened: an affiliate paid 2,000, whose
payment was then refunded by half, was owed -1,000 against their next earnings, and was shown and
paid 1,000 more as soon as a dispute of that payment opened (probe T). So a negative entry counts
against the balance as soon as it is approved, whatever the disputes: the one case where a
reversal can count before its earned entry, which stays held. That only ever pays less, sooner.
"""

from __future__ import annotations

from datetime import datetime

from refcore.models import Balance, CommissionEntry, EntryStatus

#: ``Balance`` lives with the entries it sums (``refcore.models``); kept importable from here,
#: where it was first defined.
__all__ = ["Balance", "entry_status"]


def entry_status(
    entry: CommissionEntry, *, now: datetime, payment_held: bool, paid: bool, processing: bool = False
) -> EntryStatus:
    if paid:
        return EntryStatus.PAID
    if processing:
        return EntryStatus.PROCESSING
    if payment_held and entry.amount > 0:
        return EntryStatus.HELD
    if now < entry.available_at:
        return EntryStatus.PENDING
    return EntryStatus.APPROVED
