"""The commission formula of decisions 4: ``C``, the ledger target and the one adjustment entry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.models import CommissionTerms, CommissionType, EntryKind
from refcore.rules.commission import adjustment, commission_for_payment, ledger_target

INT32_MAX = 2**31 - 1


def percent(bps: int) -> CommissionTerms:
    return CommissionTerms(type=CommissionType.PERCENT, value=bps)


def fixed(amount: int) -> CommissionTerms:
    return CommissionTerms(type=CommissionType.FIXED, value=amount)


@pytest.mark.parametrize(
    ("terms", "amount", "expected"),
    [
        (percent(2_000), 10_000, 2_000),
        (percent(1_234), 2_999, 370),
        (percent(10_000), 2_999, 2_999),
        (percent(0), 2_999, 0),
        (percent(1), 9_999, 0),
        (percent(2_000), 0, 0),
        (fixed(500), 300, 300),
        (fixed(500), 500, 500),
        (fixed(500), 1_000, 500),
        (fixed(0), 1_000, 0),
        (fixed(500), 0, 0),
        (percent(10_000), INT32_MAX, INT32_MAX),
    ],
)
def test_decisions_4_commission_of_a_payment(terms: CommissionTerms, amount: int, expected: int) -> None:
    assert commission_for_payment(terms, amount) == expected


@given(bps=st.integers(0, 10_000), amount=st.integers(0, INT32_MAX))
def test_decisions_4_percent_commission_is_floor_and_never_exceeds_the_payment(bps: int, amount: int) -> None:
    c = commission_for_payment(percent(bps), amount)
    assert c == (amount * bps) // 10_000
    assert 0 <= c <= amount


def test_decisions_4_ledger_target_examples() -> None:
    assert ledger_target(2_000, 10_000, 0, 0) == 2_000
    assert ledger_target(2_000, 10_000, 3_333, 0) == 2_000 - 666
    assert ledger_target(2_000, 10_000, 3_333, 3_333) == 2_000 - 1_333
    assert ledger_target(2_000, 10_000, 5_000, 5_000) == 0
    assert ledger_target(0, 10_000, 5_000, 0) == 0
    assert ledger_target(0, 0, 0, 0) == 0


@given(
    amount=st.integers(1, INT32_MAX),
    bps=st.integers(0, 10_000),
    data=st.data(),
)
def test_decisions_4_ledger_target_stays_within_zero_and_c(
    amount: int, bps: int, data: st.DataObject
) -> None:
    c = commission_for_payment(percent(bps), amount)
    refunded = data.draw(st.integers(0, amount))
    lost = data.draw(st.integers(0, amount - refunded))
    target = ledger_target(c, amount, refunded, lost)
    assert 0 <= target <= c
    assert target == c - (c * (refunded + lost)) // amount
    # More consumption never raises the target.
    if refunded + lost < amount:
        assert ledger_target(c, amount, refunded + 1, lost) <= target


@pytest.mark.parametrize(
    ("target", "current", "expected"),
    [
        (2_000, 2_000, None),
        (1_334, 2_000, (EntryKind.REVERSAL, -666)),
        (2_000, 1_334, (EntryKind.REINSTATEMENT, 666)),
        (0, 0, None),
        (2_000, 0, (EntryKind.REINSTATEMENT, 2_000)),
    ],
)
def test_decisions_4_one_adjustment_entry_meets_the_target(
    target: int, current: int, expected: tuple[EntryKind, int] | None
) -> None:
    assert adjustment(target, current) == expected


@given(target=st.integers(-(2**40), 2**40), current=st.integers(-(2**40), 2**40))
def test_decisions_4_adjustment_always_lands_on_the_target(target: int, current: int) -> None:
    step = adjustment(target, current)
    if step is None:
        assert target == current
    else:
        kind, amount = step
        assert current + amount == target
        assert amount != 0
        assert (kind is EntryKind.REVERSAL) == (amount < 0)
