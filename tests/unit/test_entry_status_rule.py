"""Entry status is derived (decisions 4): paid > processing > held > pending > approved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from attrs import evolve

from refcore.models import CommissionEntry, EntryKind, EntryStatus, Mode
from refcore.rules.entry_status import Balance, entry_status

AVAILABLE = datetime(2026, 2, 1, tzinfo=UTC)
ENTRY = CommissionEntry(
    id="com_1",
    app_id="app_1",
    mode=Mode.LIVE,
    program_id="prg_1",
    program_affiliate_id="aff_1",
    transaction_id="txn_1",
    source_id="txn_1",
    kind=EntryKind.EARNED,
    amount=2_000,
    currency="usd",
    available_at=AVAILABLE,
    created_at=AVAILABLE - timedelta(days=30),
)
BEFORE, AT = AVAILABLE - timedelta(microseconds=1), AVAILABLE


@pytest.mark.parametrize(
    ("now", "held", "paid", "expected"),
    [
        (BEFORE, False, False, EntryStatus.PENDING),
        (AT, False, False, EntryStatus.APPROVED),
        (BEFORE, True, False, EntryStatus.HELD),
        (AT, True, False, EntryStatus.HELD),
        (AT, True, True, EntryStatus.PAID),
        (BEFORE, False, True, EntryStatus.PAID),
    ],
)
def test_decisions_4_entry_status_precedence(
    now: datetime, held: bool, paid: bool, expected: EntryStatus
) -> None:
    assert entry_status(ENTRY, now=now, payment_held=held, paid=paid) is expected


@pytest.mark.parametrize(("now", "expected"), [(BEFORE, EntryStatus.PENDING), (AT, EntryStatus.APPROVED)])
def test_a_reversal_is_never_held(now: datetime, expected: EntryStatus) -> None:
    """An improvement on decisions 4 (docs/decisions.md): holding keeps back commission a dispute
    may take away; a held reversal left the available balance, which then rose when a dispute
    opened, and an affiliate who owed money was paid (probe T)."""
    reversal = evolve(ENTRY, id="com_2", kind=EntryKind.REVERSAL, amount=-500)
    assert entry_status(reversal, now=now, payment_held=True, paid=False) is expected
    assert (
        entry_status(reversal, now=now, payment_held=True, paid=False, processing=True)
        is EntryStatus.PROCESSING
    )


def test_decisions_5_balance_sums_entries_by_status_net_of_negatives() -> None:
    balance = Balance()
    for status, amount in [
        (EntryStatus.APPROVED, 2_000),
        (EntryStatus.APPROVED, -500),
        (EntryStatus.PENDING, 300),
        (EntryStatus.HELD, 700),
        (EntryStatus.PAID, 1_000),
    ]:
        balance = balance.add(status, amount)
    assert (balance.available, balance.pending, balance.held, balance.paid) == (1_500, 300, 700, 1_000)
