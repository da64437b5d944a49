"""The pure payout rules: readiness, what a payout takes, CSV cell safety, IBAN shape."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from refcore.errors import ValidationError
from refcore.models import CommissionEntry, EntryKind, EntryStatus, Mode
from refcore.rules.payouts import csv_cell, is_ready, normalise_iban, payable_entries, payout_total

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(id: str, amount: int) -> CommissionEntry:
    return CommissionEntry(
        id=id,
        app_id="app_1",
        mode=Mode.LIVE,
        program_id="prg_1",
        program_affiliate_id="aff_1",
        transaction_id="txn_1",
        source_id="txn_1",
        kind=EntryKind.EARNED if amount > 0 else EntryKind.REVERSAL,
        amount=amount,
        currency="usd",
        available_at=NOW,
        created_at=NOW,
    )


@pytest.mark.parametrize(
    ("available", "minimum", "ready"),
    [(0, 0, False), (-5, 0, False), (1, 0, True), (999, 1000, False), (1000, 1000, True)],
)
def test_a_payout_is_ready_when_available_is_positive_and_reaches_the_minimum(
    available: int, minimum: int, ready: bool
) -> None:
    assert is_ready(available, minimum) is ready


def test_a_payout_takes_every_approved_entry_of_either_sign_and_nothing_else() -> None:
    entries = [
        (_entry("com_1", 500), EntryStatus.APPROVED),
        (_entry("com_2", -200), EntryStatus.APPROVED),
        (_entry("com_3", 700), EntryStatus.HELD),
        (_entry("com_4", 300), EntryStatus.PENDING),
        (_entry("com_5", 100), EntryStatus.PAID),
        (_entry("com_6", 100), EntryStatus.PROCESSING),
    ]
    taken = payable_entries(entries)
    assert [e.id for e in taken] == ["com_1", "com_2"]
    assert payout_total(taken) == 300


@pytest.mark.parametrize("cell", ["=SUM(A1)", "+1", "-1+2", "@cmd", "\tx", "\rx"])
def test_csv_cells_that_a_spreadsheet_would_run_as_formulas_get_a_leading_quote(cell: str) -> None:
    assert csv_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["Pat Partner", "pat@example.com", "", "a=b", "usd"])
def test_ordinary_csv_cells_are_left_alone(cell: str) -> None:
    assert csv_cell(cell) == cell


def test_an_iban_is_stored_compact_and_upper_case() -> None:
    assert normalise_iban("de89 3704 0044 0532 0130 00") == "DE89370400440532013000"


def test_a_value_not_shaped_like_an_iban_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        normalise_iban("not an iban")
    assert caught.value.param == "iban"
