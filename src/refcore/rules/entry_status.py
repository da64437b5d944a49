"""The status of a ledger entry is derived when read, never stored (decisions 4).

Precedence: ``paid`` (in a completed payout) over ``processing`` (frozen in a payout that is
prepared or ready) over ``held`` (a dispute of its payment is open) over ``pending`` (before
``available_at``) over ``approved``.
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
    if payment_held:
        return EntryStatus.HELD
    if now < entry.available_at:
        return EntryStatus.PENDING
    return EntryStatus.APPROVED
