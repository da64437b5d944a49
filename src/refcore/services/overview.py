"""An App's numbers for one mode and one period (interface 4.2 "overview").

Counts (``clicks``, ``referrals``, ``attributed_customers``) and, per currency of the App's
programs, money: ``revenue`` (all payments), ``attributed_revenue``, ``commissions_earned``,
``commissions_reversed`` (as a positive amount), ``commissions_reinstated`` and
``commissions_paid``. Definitions, all over the half-open period ``[start, end)``:

- a click, referral or payment counts when it was recorded in the period; a referral is one
  identified customer, and ``attributed_customers`` are the referrals that are attributed;
- commissions count by the ledger entries created in the period (``earned``, ``reversal``,
  ``reinstatement`` entries), so a refund in this period of a payment from last month shows as
  a reversal now;
- ``commissions_paid`` is the total of Live payouts completed in the period (a payout pays the
  net of its entries); Test mode never pays out, so it is 0 there.

Each figure is one aggregate query (:mod:`refcore.ports.metrics`) answered from an index range.
Money in a currency that none of the App's programs uses (a processor payment without identify
metadata, in another currency) is not shown: a program's currency is what commissions are in.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from attrs import frozen

from refcore.errors import ValidationError
from refcore.models import EntryKind, Mode
from refcore.models.payout import PayoutExecutionStatus
from refcore.ports.metrics import ActivityMetrics, Period
from refcore.representation import timestamp
from refcore.services.access import mode_to_read, require_app
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx

DEFAULT_PERIOD = timedelta(days=30)


@frozen
class CurrencyTotals:
    currency: str
    revenue: int
    attributed_revenue: int
    commissions_earned: int
    commissions_reversed: int
    commissions_reinstated: int
    commissions_paid: int


@frozen
class Overview:
    app_id: str
    mode: Mode
    start: datetime
    end: datetime
    clicks: int
    referrals: int
    attributed_customers: int
    currencies: tuple[CurrencyTotals, ...]


#: The moments a period may start or end at: the default start, 30 days before the end, and every
#: store's timestamps stay in range (an end at ``0001-01-01`` was a ``500``).
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def parse_moment(value: object, *, param: str) -> datetime | None:
    """An ISO 8601 date or date-time; without a zone it is UTC. ``None`` stays ``None``.

    Errors: ``validation_error`` (``param``)."""
    if value is None or isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValidationError(f"{param} must be an ISO 8601 date or date-time", param=param) from None
    else:
        raise ValidationError(f"{param} must be an ISO 8601 date or date-time", param=param)
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        in_utc = moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before the first moment Python has
        in_utc = None
    if in_utc is None or not EARLIEST <= in_utc < LATEST:
        raise ValidationError(
            f"{param} must be from {EARLIEST.date()} to before {LATEST.date()} (UTC)", param=param
        )
    return _to_the_millisecond(moment)


def _to_the_millisecond(moment: datetime) -> datetime:
    """Drop what is finer than a millisecond: refcore shows every moment at that precision, the
    period's echoed ``from`` and ``to`` included, and the figures must be those that echo names
    (with ``from=…00.0005`` the figures had counted from half a millisecond later than shown)."""
    return moment.replace(microsecond=moment.microsecond - moment.microsecond % 1000)


def _money(
    metrics: ActivityMetrics, app_id: str, mode: Mode, currency: str, period: Period
) -> CurrencyTotals:
    scope = {"app_id": app_id, "mode": mode, "currency": currency}
    attributed = metrics.sum("payments", "amount", {**scope, "attributed": True}, within=period)
    unattributed = metrics.sum("payments", "amount", {**scope, "attributed": False}, within=period)

    def entries(kind: EntryKind) -> int:
        return metrics.sum("commission_entries", "amount", {**scope, "kind": kind}, within=period)

    paid = 0
    if mode is Mode.LIVE:
        paid = metrics.sum(
            "payout_executions",
            "amount",
            {"app_id": app_id, "status": PayoutExecutionStatus.SUCCEEDED, "currency": currency},
            within=Period(start=period.start, end=period.end, field="completed_at"),
        )
    return CurrencyTotals(
        currency=currency,
        revenue=attributed + unattributed,
        attributed_revenue=attributed,
        commissions_earned=entries(EntryKind.EARNED),
        commissions_reversed=-entries(EntryKind.REVERSAL),
        commissions_reinstated=entries(EntryKind.REINSTATEMENT),
        commissions_paid=paid,
    )


def _empty_period(given_start: datetime | None, given_end: datetime | None) -> ValidationError:
    """The refusal of a period that holds no moment, naming only what the caller sent (probe AK:
    a ``to`` alone in January 1970 was told "from must be before to")."""
    if given_start is None:
        return ValidationError(f"to must be after {timestamp(EARLIEST)}, the earliest from", param="to")
    if given_end is None:
        return ValidationError("from must be before now, the default to", param="from")
    return ValidationError("from must be before to", param="from")


def overview(
    rt: Runtime,
    principal: Principal,
    app_id: str,
    *,
    environment: object = None,
    start: object = None,
    end: object = None,
) -> Overview:
    """The figures of ``[start, end)``; by default the 30 days up to now (now included).

    ``GET /v1/apps/:id/overview``. Errors: ``validation_error`` (``environment``, ``from``, ``to``;
    ``from`` not before ``to``), ``mode_mismatch`` (an App key asking for the other mode),
    ``app_not_found``."""
    mode = mode_to_read(principal, environment)
    given_start = parse_moment(start, param="from")
    given_end = parse_moment(end, param="to")

    def work(tx: Tx) -> Overview:
        require_app(tx, principal, app_id)
        period_end = given_end or tx.now
        # The default start never before the earliest moment a period may name (probe H: an end
        # in January 1970 had its period start, and echo, a ``from`` in December 1969).
        period_start = given_start or max(EARLIEST, _to_the_millisecond(period_end - DEFAULT_PERIOD))
        if period_start >= period_end:
            raise _empty_period(given_start, given_end)
        # Without ``to`` the period runs up to now inclusive: what happened this very moment counts.
        period = Period(start=period_start, end=given_end)
        metrics = tx.uow.metrics()
        scope = {"app_id": app_id, "mode": mode}
        attributed = metrics.count("referrals", {**scope, "attributed": True}, within=period)
        unattributed = metrics.count("referrals", {**scope, "attributed": False}, within=period)
        currencies = sorted({p.currency for p in tx.uow.programs.find_all({"app_id": app_id})})
        return Overview(
            app_id=app_id,
            mode=mode,
            start=period_start,
            end=period_end,
            clicks=metrics.count("clicks", scope, within=period),
            referrals=attributed + unattributed,
            attributed_customers=attributed,
            currencies=tuple(_money(metrics, app_id, mode, c, period) for c in currencies),
        )

    # A dozen counts and sums that a reader sets side by side (revenue and attributed revenue,
    # earned and paid): all of one moment, even while payments arrive.
    return rt.read(work, snapshot=True)
