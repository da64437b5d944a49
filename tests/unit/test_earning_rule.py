"""Does a payment earn (decisions 4): calendar months for ``commission_duration_months``, program
and affiliate status, attribution."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime

import pytest
from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from refcore.models import (
    AffiliateStatus,
    CommissionTerms,
    CommissionType,
    Mode,
    Program,
    ProgramAffiliate,
    ProgramStatus,
    Referral,
)
from refcore.rules.earning import add_months, payment_earns


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "months", "expected"),
    [
        (at(2026, 1, 15), 1, at(2026, 2, 15)),
        (at(2026, 1, 31), 1, at(2026, 2, 28)),
        (at(2028, 1, 31), 1, at(2028, 2, 29)),  # leap year
        (at(2100, 1, 31), 1, at(2100, 2, 28)),  # century, not leap
        (at(2000, 1, 31), 1, at(2000, 2, 29)),  # 400-year leap
        (at(2026, 3, 31), 1, at(2026, 4, 30)),
        (at(2026, 11, 30), 3, at(2027, 2, 28)),
        (at(2026, 12, 31), 1, at(2027, 1, 31)),
        (at(2026, 5, 10, 13), 12, at(2027, 5, 10, 13)),
        (at(2026, 5, 10), 0, at(2026, 5, 10)),
        (at(2026, 1, 1), 1200, at(2126, 1, 1)),
    ],
)
def test_decisions_4_add_months_is_calendar_months_clamping_the_day(
    start: datetime, months: int, expected: datetime
) -> None:
    assert add_months(start, months) == expected


@given(
    start=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    ),
    months=st.integers(0, 1200),
)
def test_decisions_4_add_months_lands_in_the_right_month_never_earlier(start: datetime, months: int) -> None:
    end = add_months(start, months)
    assert (end.year * 12 + end.month) - (start.year * 12 + start.month) == months
    assert end.day == min(start.day, calendar.monthrange(end.year, end.month)[1])
    assert end.time() == start.time() and end.tzinfo is start.tzinfo
    assert end >= start


START = at(2026, 1, 31, 12)
PROGRAM = Program(
    id="prg_1",
    app_id="app_1",
    name="P",
    slug="p",
    currency="usd",
    commission=CommissionTerms(type=CommissionType.PERCENT, value=2_000),
    created_at=START,
)
AFFILIATE = ProgramAffiliate(
    id="aff_1",
    app_id="app_1",
    program_id="prg_1",
    email="a@example.com",
    name="A",
    status=AffiliateStatus.ACTIVE,
    created_at=START,
)
REFERRAL = Referral(
    id="ref_1",
    app_id="app_1",
    mode=Mode.LIVE,
    customer_id="rcus_1",
    program_id="prg_1",
    attributed=True,
    created_at=START,
    program_affiliate_id="aff_1",
)


def test_decisions_4_attributed_referral_of_active_affiliate_earns() -> None:
    assert payment_earns(REFERRAL, PROGRAM, AFFILIATE, START)


def test_decisions_4_unattributed_referral_does_not_earn() -> None:
    assert not payment_earns(evolve(REFERRAL, attributed=False), PROGRAM, AFFILIATE, START)
    assert not payment_earns(REFERRAL, PROGRAM, None, START)


@pytest.mark.parametrize("status", [AffiliateStatus.PENDING, AffiliateStatus.DISABLED])
def test_decisions_4_inactive_affiliate_does_not_earn(status: AffiliateStatus) -> None:
    assert not payment_earns(REFERRAL, PROGRAM, evolve(AFFILIATE, status=status), START)


def test_decisions_2_paused_program_keeps_earning_disabled_does_not() -> None:
    assert payment_earns(REFERRAL, evolve(PROGRAM, status=ProgramStatus.PAUSED), AFFILIATE, START)
    assert not payment_earns(REFERRAL, evolve(PROGRAM, status=ProgramStatus.DISABLED), AFFILIATE, START)


def test_decisions_4_duration_ends_at_the_same_calendar_moment_months_later() -> None:
    program = evolve(PROGRAM, commission_duration_months=1)
    ends = at(2026, 2, 28, 12)
    assert payment_earns(REFERRAL, program, AFFILIATE, ends.replace(hour=11))
    assert not payment_earns(REFERRAL, program, AFFILIATE, ends)
    assert payment_earns(REFERRAL, PROGRAM, AFFILIATE, at(2126, 1, 1))  # lifetime when null
