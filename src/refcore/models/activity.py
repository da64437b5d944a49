"""Tracking activity: clicks, customers and referrals. Each belongs to one mode."""

from __future__ import annotations

from datetime import datetime

from attrs import frozen

from refcore.models.mode import Mode


@frozen
class Click:
    id: str
    app_id: str
    mode: Mode
    program_id: str
    program_affiliate_id: str
    link_id: str
    created_at: datetime
    page: str | None = None
    referrer: str | None = None
    visitor_ip: str | None = None
    visitor_user_agent: str | None = None


@frozen
class Customer:
    id: str
    app_id: str
    mode: Mode
    created_at: datetime
    external_customer_id: str | None = None
    email: str | None = None


@frozen
class Referral:
    """One per customer: the first attribution wins and is never rewritten."""

    id: str
    app_id: str
    mode: Mode
    customer_id: str
    program_id: str
    attributed: bool
    created_at: datetime
    program_affiliate_id: str | None = None
    click_id: str | None = None
    attribution_source: str | None = None
    promotion_code: str | None = None
