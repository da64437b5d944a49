"""Programs: the commission terms an App offers its affiliates."""

from __future__ import annotations

import enum
from datetime import datetime

from attrs import frozen


class CommissionType(enum.StrEnum):
    PERCENT = "percent"
    FIXED = "fixed"


@frozen
class CommissionTerms:
    """``percent`` with ``value`` in basis points (0..10000), or ``fixed`` with ``value`` in minor units."""

    type: CommissionType
    value: int


class ProgramStatus(enum.StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    DISABLED = "disabled"


@frozen
class Program:
    id: str
    app_id: str
    name: str
    slug: str
    currency: str
    commission: CommissionTerms
    created_at: datetime
    commission_duration_months: int | None = None
    attribution_window_days: int = 60
    hold_days: int = 30
    minimum_payout: int = 0
    auto_approve: bool = False
    promotion_code_fallback: bool = False
    status: ProgramStatus = ProgramStatus.ACTIVE


@frozen
class ProgramTerms:
    """One published version of a program's terms; the newest is current."""

    id: str
    program_id: str
    text: str
    created_at: datetime
