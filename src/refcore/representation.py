"""The public representation of every model: the JSON objects of the API and of event snapshots.

One mapping serves both, so a webhook's ``data`` is exactly what ``GET`` on the resource shows.
Internal fields (digests, running totals used for locking, ``status_before_disable``) are never
represented. Every object carries ``id``, ``object`` and ``created_at``; activity carries
``livemode``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import singledispatch
from typing import Any

from refcore.models import (
    ApiKey,
    App,
    Click,
    CommissionEntry,
    CommissionTerms,
    CommissionType,
    Customer,
    Dispute,
    EntryStatus,
    Event,
    Link,
    Mode,
    Organization,
    Payment,
    Program,
    ProgramAffiliate,
    ProgramTerms,
    Referral,
    Refund,
)

JsonObject = dict[str, Any]


def timestamp(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``, millisecond precision (``2026-01-31T09:05:00.250Z``).

    Formatted field by field: ``isoformat(timespec=...)`` and the ``Z`` replacement cost twice
    the instructions, and a commissions page formats fifty of these."""
    if moment is None:
        return None
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031 (%-format: the cheapest here)
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        moment.microsecond // 1000,
    )


def _base(obj_type: str, id: str, created_at: datetime, **fields: Any) -> JsonObject:
    return {"id": id, "object": obj_type, "created_at": timestamp(created_at), **fields}


def _activity(mode: Mode) -> bool:
    return mode.livemode


@singledispatch
def represent(obj: object) -> JsonObject:
    raise TypeError(f"no public representation for {type(obj).__name__}")


@represent.register
def _organization(obj: Organization) -> JsonObject:
    return _base("organization", obj.id, obj.created_at, name=obj.name)


@represent.register
def _app(obj: App) -> JsonObject:
    return _base(
        "app",
        obj.id,
        obj.created_at,
        organization_id=obj.organization_id,
        name=obj.name,
        live_revenue_source=obj.live_revenue_source.value if obj.live_revenue_source else None,
    )


@represent.register
def _api_key(obj: ApiKey) -> JsonObject:
    return _base(
        "api_key",
        obj.id,
        obj.created_at,
        app_id=obj.app_id,
        kind=obj.kind.value,
        mode=obj.mode.value,
        last4=obj.last4,
        revoked_at=timestamp(obj.revoked_at),
        program_affiliate_id=obj.program_affiliate_id,
    )


def represent_commission_terms(terms: CommissionTerms) -> JsonObject:
    if terms.type is CommissionType.PERCENT:
        return {"type": "percent", "bps": terms.value}
    return {"type": "fixed", "amount": terms.value}


@represent.register
def _program(obj: Program) -> JsonObject:
    return _base(
        "program",
        obj.id,
        obj.created_at,
        app_id=obj.app_id,
        name=obj.name,
        slug=obj.slug,
        currency=obj.currency,
        commission=represent_commission_terms(obj.commission),
        commission_duration_months=obj.commission_duration_months,
        attribution_window_days=obj.attribution_window_days,
        hold_days=obj.hold_days,
        minimum_payout=obj.minimum_payout,
        auto_approve=obj.auto_approve,
        promotion_code_fallback=obj.promotion_code_fallback,
        status=obj.status.value,
    )


@represent.register
def _program_terms(obj: ProgramTerms) -> JsonObject:
    return _base("program_terms", obj.id, obj.created_at, program_id=obj.program_id, text=obj.text)


@represent.register
def _program_affiliate(obj: ProgramAffiliate) -> JsonObject:
    return _base(
        "program_affiliate",
        obj.id,
        obj.created_at,
        program_id=obj.program_id,
        email=obj.email,
        name=obj.name,
        status=obj.status.value,
    )


@represent.register
def _link(obj: Link) -> JsonObject:
    return _base(
        "link",
        obj.id,
        obj.created_at,
        program_affiliate_id=obj.program_affiliate_id,
        program_id=obj.program_id,
        code=obj.code,
        name=obj.name,
    )


@represent.register
def _click(obj: Click) -> JsonObject:
    return _base(
        "click",
        obj.id,
        obj.created_at,
        livemode=_activity(obj.mode),
        program_id=obj.program_id,
        program_affiliate_id=obj.program_affiliate_id,
        link_id=obj.link_id,
        page=obj.page,
        referrer=obj.referrer,
    )


@represent.register
def _customer(obj: Customer) -> JsonObject:
    return _base(
        "customer",
        obj.id,
        obj.created_at,
        livemode=_activity(obj.mode),
        external_customer_id=obj.external_customer_id,
        email=obj.email,
    )


@represent.register
def _referral(obj: Referral) -> JsonObject:
    return _base(
        "referral",
        obj.id,
        obj.created_at,
        livemode=_activity(obj.mode),
        customer_id=obj.customer_id,
        program_id=obj.program_id,
        program_affiliate_id=obj.program_affiliate_id,
        click_id=obj.click_id,
        attributed=obj.attributed,
        attribution_source=obj.attribution_source,
    )


@represent.register
def _payment(obj: Payment) -> JsonObject:
    return _base(
        "transaction",
        obj.id,
        obj.created_at,
        livemode=_activity(obj.mode),
        type="payment",
        payment_id=obj.payment_id,
        customer_id=obj.customer_id,
        program_id=obj.program_id,
        program_affiliate_id=obj.program_affiliate_id,
        amount=obj.amount,
        currency=obj.currency,
        attributed=obj.attributed,
        refunded_amount=obj.refunded_amount,
        disputed_amount=obj.disputed_amount,
        commission_amount=obj.commission_amount,
        source=obj.source.value,
    )


@represent.register
def _refund(obj: Refund) -> JsonObject:
    return _base(
        "refund",
        obj.id,
        obj.created_at,
        livemode=_activity(obj.mode),
        refund_id=obj.refund_id,
        payment_id=obj.payment_id,
        transaction_id=obj.transaction_id,
        amount=obj.amount,
    )


@represent.register
def _dispute(obj: Dispute) -> JsonObject:
    return _base(
        "dispute",
        obj.id,
        obj.created_at,
        livemode=_activity(obj.mode),
        dispute_id=obj.dispute_id,
        payment_id=obj.payment_id,
        transaction_id=obj.transaction_id,
        status=obj.status.value,
        amount=obj.amount,
        inquiry=obj.inquiry,
        updated_at=timestamp(obj.updated_at),
    )


def represent_entry(obj: CommissionEntry, status: EntryStatus) -> JsonObject:
    """Entries need their derived status, which depends on the clock, disputes and payouts."""
    return _base(
        "commission_entry",
        obj.id,
        obj.created_at,
        livemode=_activity(obj.mode),
        program_affiliate_id=obj.program_affiliate_id,
        program_id=obj.program_id,
        transaction_id=obj.transaction_id,
        source_id=obj.source_id,
        kind=obj.kind.value,
        amount=obj.amount,
        currency=obj.currency,
        status=status.value,
        available_at=timestamp(obj.available_at),
    )


def envelope(event: Event) -> JsonObject:
    """The webhook envelope of interface 2.9."""
    return {
        "id": event.id,
        "type": event.type.value,
        "created_at": timestamp(event.created_at),
        "livemode": event.livemode,
        "app_id": event.app_id,
        "data": event.data,
    }
