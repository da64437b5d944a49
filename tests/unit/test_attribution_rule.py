"""Attribution (decisions 3): the window, active program and affiliate, no self-referral."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from attrs import evolve

from refcore.models import (
    AffiliateStatus,
    Click,
    CommissionTerms,
    CommissionType,
    Mode,
    Program,
    ProgramAffiliate,
    ProgramStatus,
)
from refcore.rules.attribution import click_within_window, is_self_referral, may_attribute

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PROGRAM = Program(
    id="prg_1",
    app_id="app_1",
    name="P",
    slug="p",
    currency="usd",
    commission=CommissionTerms(type=CommissionType.PERCENT, value=2_000),
    created_at=T0,
    attribution_window_days=60,
)
AFFILIATE = ProgramAffiliate(
    id="aff_1",
    app_id="app_1",
    program_id="prg_1",
    email="partner@example.com",
    name="A",
    status=AffiliateStatus.ACTIVE,
    created_at=T0,
)
CLICK = Click(
    id="clk_1",
    app_id="app_1",
    mode=Mode.LIVE,
    program_id="prg_1",
    program_affiliate_id="aff_1",
    link_id="lnk_1",
    created_at=T0,
)


def test_decisions_3_window_is_inclusive_of_its_last_moment() -> None:
    assert click_within_window(CLICK, PROGRAM, T0)
    assert click_within_window(CLICK, PROGRAM, T0 + timedelta(days=60))
    assert not click_within_window(CLICK, PROGRAM, T0 + timedelta(days=60, microseconds=1))


@pytest.mark.parametrize("email", ["partner@example.com", "PARTNER@example.com", " partner@example.com "])
def test_decisions_3_self_referral_compares_emails_case_insensitively(email: str) -> None:
    assert is_self_referral(AFFILIATE, email)
    assert not may_attribute(PROGRAM, AFFILIATE, email)


@pytest.mark.parametrize(
    ("affiliate_email", "customer_email"),
    [("strasse@example.com", "stra\u00dfe@example.com"), ("stra\u00dfe@example.com", "STRASSE@example.com")],
)
def test_decisions_3_self_referral_is_the_address_that_tells_affiliates_apart(
    affiliate_email: str, customer_email: str
) -> None:
    """``strasse@`` and ``straße@`` are two mailboxes, which may be two affiliates of one program;
    case-folded, one was taken for a self-referral of the other (probe AI)."""
    affiliate = evolve(AFFILIATE, email=affiliate_email)
    assert not is_self_referral(affiliate, customer_email)
    assert is_self_referral(affiliate, affiliate_email.capitalize())


def test_decisions_3_no_email_is_never_self_referral() -> None:
    assert not is_self_referral(AFFILIATE, None)
    assert may_attribute(PROGRAM, AFFILIATE, None)
    assert may_attribute(PROGRAM, AFFILIATE, "someone@example.com")


@pytest.mark.parametrize("status", [ProgramStatus.PAUSED, ProgramStatus.DISABLED])
def test_decisions_3_only_active_programs_attribute(status: ProgramStatus) -> None:
    assert not may_attribute(evolve(PROGRAM, status=status), AFFILIATE, None)


@pytest.mark.parametrize("status", [AffiliateStatus.PENDING, AffiliateStatus.DISABLED])
def test_decisions_3_only_active_affiliates_attribute(status: AffiliateStatus) -> None:
    assert not may_attribute(PROGRAM, evolve(AFFILIATE, status=status), None)
