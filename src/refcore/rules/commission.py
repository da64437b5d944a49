"""The commission formula (decisions 4): one target for a payment's entries at every moment."""

from __future__ import annotations

from refcore.models import CommissionTerms, CommissionType, EntryKind


def commission_for_payment(terms: CommissionTerms, amount: int) -> int:
    """``C``: ``floor(A * bps / 10000)`` for percent, ``min(fixed, A)`` for fixed, 0 when ``A = 0``."""
    if amount <= 0:
        return 0
    if terms.type is CommissionType.PERCENT:
        return amount * terms.value // 10000
    return min(terms.value, amount)


def ledger_target(commission: int, amount: int, refunded: int, lost: int) -> int:
    """What a payment's entries must sum to: ``C - floor(C * (refunded + lost) / A)``."""
    if amount <= 0 or commission <= 0:
        return 0
    return commission - (commission * (refunded + lost)) // amount


def adjustment(target: int, current_sum: int) -> tuple[EntryKind, int] | None:
    """The one entry to append so the sum meets the target, or ``None`` when it already does."""
    delta = target - current_sum
    if delta == 0:
        return None
    return (EntryKind.REINSTATEMENT if delta > 0 else EntryKind.REVERSAL), delta
