"""Does a payment earn commission at all (decisions 4, first bullet)?"""

from __future__ import annotations

from datetime import datetime

from refcore.models import AffiliateStatus, Program, ProgramAffiliate, ProgramStatus, Referral


def add_months(moment: datetime, months: int) -> datetime:
    """Calendar months, clamping the day (Jan 31 + 1 month = Feb 28/29)."""
    month_index = moment.month - 1 + months
    year, month = moment.year + month_index // 12, month_index % 12 + 1
    days_in_month = [31, 29 if _leap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return moment.replace(year=year, month=month, day=min(moment.day, days_in_month[month - 1]))


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def payment_earns(
    referral: Referral,
    program: Program,
    affiliate: ProgramAffiliate | None,
    paid_at: datetime,
) -> bool:
    if not referral.attributed or affiliate is None:
        return False
    if affiliate.status is not AffiliateStatus.ACTIVE:
        return False
    if program.status is ProgramStatus.DISABLED:
        return False
    if program.commission_duration_months is not None:
        ends = add_months(referral.created_at, program.commission_duration_months)
        if paid_at >= ends:
            return False
    return True
