"""When does an identify attribute a customer to an affiliate (decisions 3)?"""

from __future__ import annotations

from datetime import datetime, timedelta

from refcore.models import AffiliateStatus, Click, Program, ProgramAffiliate, ProgramStatus
from refcore.validation import address_key


def is_self_referral(affiliate: ProgramAffiliate, customer_email: str | None) -> bool:
    """The customer's address is the affiliate's, compared in the one form of
    :func:`~refcore.validation.address_key`, the form that tells two affiliates of a program
    apart: also an affiliate stored before addresses were composed (NFC) is recognized under
    either spelling. Case-folded as well, ``straße@…`` had been taken for the affiliate
    ``strasse@…``, another mailbox that can be another affiliate of the program (probe AI)."""
    return customer_email is not None and address_key(customer_email) == address_key(affiliate.email)


def click_within_window(click: Click, program: Program, now: datetime) -> bool:
    return now - click.created_at <= timedelta(days=program.attribution_window_days)


def may_attribute(program: Program, affiliate: ProgramAffiliate, customer_email: str | None) -> bool:
    """Program active, affiliate active, and not the affiliate referring themself."""
    return (
        program.status is ProgramStatus.ACTIVE
        and affiliate.status is AffiliateStatus.ACTIVE
        and not is_self_referral(affiliate, customer_email)
    )
