"""Ledger reads on SQL: an affiliate's balance from a projection, whatever its history.

The statuses follow the core's precedence (see :mod:`refcore.ports.ledger`):

- ``paid`` and ``processing`` are the sums of the affiliate's ``succeeded`` and of its
  ``prepared``/``ready`` payout executions: an execution's amount is the sum of its items, each
  holding one entry (the payouts' invariant, :class:`~refcore.models.payout.PayoutExecution`).
  Triggers keep both sums in one row per affiliate (``affiliate_payout_sums``, migration 0009),
  so years of payouts cost one row, not one index entry per payout;
- every other entry is ``held``, ``pending`` or ``approved``. Their sums come from
  ``affiliate_balance_buckets``, which database triggers keep per UTC month, day, hour and minute
  of ``available_at`` (migrations 0004 and 0005; since 0018 a reversal is never held): ``held``
  is the held column of every month;
  ``approved`` is the open column of the months before this one, of this month's days before
  today, of today's hours before this one, of this hour's minutes before this one, and the entries
  of this minute up to ``now`` (read from the ledger through the
  ``(program_affiliate_id, mode, available_at)`` index); ``pending`` is the rest of the open column.

So a balance reads one row per month of the affiliate's history, at most 31 day rows, 24 hour
rows and 60 minute rows, and one minute of entries, however many entries the affiliate has: its
cost follows the calendar, not the number of entries or of payouts (migrations 0005 and 0009
have the figures). The rule itself stays the core's: the contract suite compares these sums
with the core's status of every entry, and ``tests/sqlstore/test_balance_buckets.py``
compares the projection with a full scan of the ledger after random histories.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    bindparam,
    case,
    exists,
    func,
    literal,
    select,
    text,
)

from refcore.models import CommissionEntry, EntryStatus, Mode
from refcore.models.payout import PayoutExecutionStatus
from refcore.ports.ledger import EntryPayoutStates
from refcore_sqlstore import postgres_round_trips
from refcore_sqlstore.driver import compiled_for
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.id_lists import IdList, in_id_list
from refcore_sqlstore.mapping import RowMapper
from refcore_sqlstore.tables import (
    affiliate_balance_buckets,
    affiliate_payout_sums,
    commission_entries,
    payments,
    payout_executions,
    payout_items,
)
from refcore_sqlstore.types import UtcDateTime

_LIVE_PAYOUT = (PayoutExecutionStatus.PREPARED.value, PayoutExecutionStatus.READY.value)
_SUCCEEDED = PayoutExecutionStatus.SUCCEEDED.value

#: Built once: lookups by a list of IDs (one bound list, see ``id_lists``) through the primary
#: or a unique key.
_PAYOUT_STATES = (
    select(payout_items.c.entry_id, payout_executions.c.status)
    .select_from(payout_items.join(payout_executions, payout_executions.c.id == payout_items.c.execution_id))
    .where(in_id_list(payout_items.c.active_entry_id, "ids"))
)
#: In no order: sorting the IDs in Python costs less than asking both databases for an order
#: their plans for a list of keys need not give.
_ENTRIES_BY_ID = select(*commission_entries.columns).where(in_id_list(commission_entries.c.id, "ids"))
_HELD_PAYMENTS = select(payments.c.id).where(
    in_id_list(payments.c.id, "ids"), payments.c.open_dispute_count > 0
)


#: An affiliate's entries that no payout item holds, by the unique index on
#: ``payout_items.active_entry_id``; the columns in the table's order, as its mapper reads them.
_UNSETTLED = (
    select(*commission_entries.columns)
    .where(
        commission_entries.c.program_affiliate_id == bindparam("affiliate"),
        commission_entries.c.mode == bindparam("mode"),
        ~exists().where(payout_items.c.active_entry_id == commission_entries.c.id),
    )
    .order_by(commission_entries.c.id)
)
_ENTRIES = RowMapper(CommissionEntry, commission_entries)


#: A payout's locks, PostgreSQL only (SQLite runs one writer at a time): its entries' payments
#: in ID order, then the balance rows its entries move, made where missing (a past day, hour or
#: minute pruned since), in the order the triggers take them for one entry: by grain, then
#: bucket. The bucket text and the grains' formats are the triggers' own (migration 0005).
_LOCK_PAYOUT_PAYMENTS = text(
    """
    SELECT p.id FROM payments AS p
    WHERE p.id = ANY(ARRAY(
        SELECT e.transaction_id FROM commission_entries AS e WHERE e.id = ANY(CAST(:ids AS TEXT[]))
    ))
    ORDER BY p.id
    FOR SHARE OF p
    """
).bindparams(bindparam("ids", type_=IdList()))
_LOCK_PAYOUT_BUCKETS = text(
    """
    INSERT INTO affiliate_balance_buckets AS b
        (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
    SELECT DISTINCT e.program_affiliate_id, e.mode, g.grain,
           to_char(e.available_at AT TIME ZONE 'UTC', g.format), 0, 0
    FROM commission_entries AS e CROSS JOIN (VALUES
        ('day', 'YYYY-MM-DD'), ('hour', 'YYYY-MM-DD HH24'),
        ('minute', 'YYYY-MM-DD HH24:MI'), ('month', 'YYYY-MM')) AS g(grain, format)
    WHERE e.id = ANY(CAST(:ids AS TEXT[]))
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (program_affiliate_id, mode, grain, bucket) DO UPDATE SET open_amount = b.open_amount
    """
).bindparams(bindparam("ids", type_=IdList()))


def _payout_sum(column: Any, affiliate: Any) -> Any:
    """One of the affiliate's payout sums, from its one row (``0`` before its first payout)."""
    s = affiliate_payout_sums
    return func.coalesce(select(column).where(s.c.program_affiliate_id == affiliate).scalar_subquery(), 0)


def _payout_sums(with_payouts: bool, affiliate: Any) -> tuple[Any, Any]:
    """Paid and processing: the affiliate's payout sums, or zeros (a Test balance has none)."""
    if not with_payouts:
        return literal(0), literal(0)
    return (
        _payout_sum(affiliate_payout_sums.c.paid_amount, affiliate),
        _payout_sum(affiliate_payout_sums.c.processing_amount, affiliate),
    )


def _month_sums() -> tuple[Any, ...]:
    """Held, open, and open before this month, over the affiliate's month rows (the FROM)."""
    b = affiliate_balance_buckets
    return (
        func.coalesce(func.sum(b.c.held_amount), 0),
        func.coalesce(func.sum(b.c.open_amount), 0),
        func.coalesce(func.sum(case((b.c.bucket < bindparam("this_month"), b.c.open_amount), else_=0)), 0),
    )


def _open_between(grain: str, first: str, before: str, affiliate: Any) -> Any:
    """The open column of ``grain`` rows from bucket ``first`` up to, not including, ``before``."""
    b = affiliate_balance_buckets
    return (
        select(func.coalesce(func.sum(b.c.open_amount), 0))
        .where(
            b.c.program_affiliate_id == affiliate,
            b.c.mode == bindparam("mode"),
            b.c.grain == grain,
            b.c.bucket >= bindparam(first),
            b.c.bucket < bindparam(before),
        )
        .scalar_subquery()
    )


def _approved_this_minute(affiliate: Any) -> Any:
    """The entries of the current minute already available at ``now``, unless held (positive, with
    an open dispute of their payment) or paid out."""
    e, p, i = commission_entries, payments, payout_items
    held = and_(func.coalesce(p.c.open_dispute_count, 0) > 0, e.c.amount > 0)
    return (
        select(func.coalesce(func.sum(e.c.amount), 0))
        .select_from(e.outerjoin(p, p.c.id == e.c.transaction_id))
        .where(
            e.c.program_affiliate_id == affiliate,
            e.c.mode == bindparam("mode"),
            e.c.available_at >= bindparam("minute_start", type_=UtcDateTime()),
            e.c.available_at <= bindparam("now", type_=UtcDateTime()),
            ~held,
            ~exists().where(i.c.active_entry_id == e.c.id),
        )
        .scalar_subquery()
    )


def _status_sums_statement(with_payouts: bool) -> Any:
    """Built once per shape (statement building costs more than running it)."""
    affiliate: Any = bindparam("affiliate")
    b = affiliate_balance_buckets
    # An aggregate over the month rows, one index range; the rest are uncorrelated subqueries.
    return select(
        *_payout_sums(with_payouts, affiliate),
        *_month_sums(),
        *_open_since_this_month(affiliate),
    ).where(
        b.c.program_affiliate_id == affiliate,
        b.c.mode == bindparam("mode"),
        b.c.grain == "month",
    )


def _open_since_this_month(affiliate: Any) -> tuple[Any, ...]:
    """The approved parts after the months: this month's days, today's hours, this hour's
    minutes, and this minute's entries."""
    return (
        _open_between("day", "first_day", "today", affiliate),
        _open_between("hour", "first_hour", "this_hour", affiliate),
        _open_between("minute", "first_minute", "this_minute", affiliate),
        _approved_this_minute(affiliate),
    )


def _listed_status_sums_statement(with_payouts: bool) -> Any:
    """PostgreSQL's form for many affiliates at once: the same sums, as subqueries correlated
    to each ID of one bound list (``unnest``), in one statement and one round trip.

    Sent once per affiliate, the balances of a CSV export or a payout batch had cost a round
    trip each: 2,000 affiliates took 1.45 s to export (``bench/history.md``, forty-first
    session). The month rows are read three times here, once per sum, instead of once in one
    aggregate: a few rows a year each."""
    listed = func.unnest(bindparam("affiliates", type_=IdList())).table_valued("affiliate").render_derived()
    affiliate = listed.c.affiliate
    b = affiliate_balance_buckets
    of_months = (b.c.program_affiliate_id == affiliate, b.c.mode == bindparam("mode"), b.c.grain == "month")
    month_sums = (select(total).where(*of_months).scalar_subquery() for total in _month_sums())
    return select(
        affiliate, *_payout_sums(with_payouts, affiliate), *month_sums, *_open_since_this_month(affiliate)
    ).select_from(listed)


#: Payouts are Live only: a Test balance has no paid or processing part.
_STATUS_SUMS = {Mode.LIVE: _status_sums_statement(True), Mode.TEST: _status_sums_statement(False)}
_LISTED_STATUS_SUMS = {
    Mode.LIVE: _listed_status_sums_statement(True),
    Mode.TEST: _listed_status_sums_statement(False),
}
#: Affiliates one listed statement reads: a bounded statement, whatever the program's size.
_LISTED_TOGETHER = 500


_RESET_PLAN_MODE = text("RESET plan_cache_mode")


@contextmanager
def _generic_plan(connection: Connection) -> Iterator[None]:
    """On PostgreSQL, run the statements inside with the generic plan of their prepared statement.

    The balance's sums are range lookups on the affiliate's own key, whose best plan is the same
    for every affiliate and every moment, but PostgreSQL estimates the generic plan of their range
    conditions pessimistically and so plans the statement anew on every call (a custom plan):
    0.74 ms of planning for about 0.5 ms of work. Forced generic, the balance read's median went
    from 3.40 to 2.54 ms (``bench/history.md``, fifth session). The setting is put back at once
    so that nothing else is planned differently: ``SET LOCAL`` inside a transaction (it would end
    with it anyway), a session ``SET`` and ``RESET`` in a read unit of work, which begins no
    transaction (:mod:`refcore_sqlstore.postgres_reads`).

    The settings wait to go with the next statement (:func:`postgres_round_trips.defer`), so the
    ``SET`` costs no round trip of its own, and inside a transaction neither does the ``SET
    LOCAL`` that puts it back. A read's ``RESET`` is sent at once, one round trip: left waiting,
    it would be discarded with the connection's return to the pool and the setting kept. Every
    balance in a read had paid three round trips instead of one, and a page of ten ready payouts
    thirty instead of eleven (``bench/history.md``, thirty-seventh session)."""
    if connection.dialect.name != "postgresql":
        yield
        return
    if not postgres_round_trips.in_transaction(connection):
        postgres_round_trips.defer(connection, "SET plan_cache_mode = force_generic_plan", None, many=False)
        try:
            yield
        finally:
            compiled_for(_RESET_PLAN_MODE, connection.dialect).execute(connection, {})
        return
    postgres_round_trips.defer(connection, "SET LOCAL plan_cache_mode = force_generic_plan", None, many=False)
    try:
        yield
    finally:
        postgres_round_trips.defer(connection, "SET LOCAL plan_cache_mode = auto", None, many=False)


def _status_sums_parameters(mode: Mode, now: datetime) -> dict[str, Any]:
    """The statement's parameters but the affiliate: the bucket edges of ``now`` (UTC)."""
    now = now.astimezone(UTC)
    today = now.strftime("%Y-%m-%d")
    return {
        "mode": mode.value,
        "this_month": now.strftime("%Y-%m"),
        "first_day": now.strftime("%Y-%m-01"),
        "today": today,
        "first_hour": f"{today} 00",
        "this_hour": now.strftime("%Y-%m-%d %H"),
        "first_minute": now.strftime("%Y-%m-%d %H:00"),
        "this_minute": now.strftime("%Y-%m-%d %H:%M"),
        "minute_start": now.replace(second=0, microsecond=0),
        "now": now,
    }


def _sums_of_row(row: Sequence[Any]) -> dict[EntryStatus, int]:
    paid, processing, held, open_total, *approved_parts = (int(value or 0) for value in row)
    approved = sum(approved_parts)
    return {
        EntryStatus.PAID: paid,
        EntryStatus.PROCESSING: processing,
        EntryStatus.HELD: held,
        EntryStatus.PENDING: open_total - approved,
        EntryStatus.APPROVED: approved,
    }


class SqlLedgerReads:
    """Implements :class:`refcore.ports.ledger.LedgerReads` inside one unit of work's connection."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def status_sums(self, program_affiliate_id: str, mode: Mode, now: datetime) -> Mapping[EntryStatus, int]:
        return self.status_sums_of([program_affiliate_id], mode, now)[program_affiliate_id]

    def status_sums_of(
        self, program_affiliate_ids: Sequence[str], mode: Mode, now: datetime
    ) -> dict[str, Mapping[EntryStatus, int]]:
        if not program_affiliate_ids:
            return {}  # nothing to set the plan mode for
        parameters = _status_sums_parameters(mode, now)
        dialect = self._connection.dialect
        sums: dict[str, Mapping[EntryStatus, int]] = {}
        with database_errors(), _generic_plan(self._connection):
            if dialect.name == "postgresql" and len(program_affiliate_ids) > 1:
                listed = compiled_for(_LISTED_STATUS_SUMS[mode], dialect)
                found: dict[str, Mapping[EntryStatus, int]] = {}
                for start in range(0, len(program_affiliate_ids), _LISTED_TOGETHER):
                    chunk = program_affiliate_ids[start : start + _LISTED_TOGETHER]
                    for affiliate, *columns in listed.fetch_tuples(
                        self._connection, {**parameters, "affiliates": chunk}
                    ):
                        found[affiliate] = _sums_of_row(columns)
                return {affiliate: found[affiliate] for affiliate in program_affiliate_ids}  # as asked
            statement = compiled_for(_STATUS_SUMS[mode], dialect)
            for affiliate in program_affiliate_ids:
                (row,) = statement.fetch_tuples(self._connection, {**parameters, "affiliate": affiliate})
                sums[affiliate] = _sums_of_row(row)
        return sums

    def unsettled_entries(self, program_affiliate_id: str, mode: Mode) -> list[CommissionEntry]:
        parameters = {"affiliate": program_affiliate_id, "mode": mode.value}
        statement = compiled_for(_UNSETTLED, self._connection.dialect)
        with database_errors():
            rows = statement.fetch_tuples(self._connection, parameters)
        return [_ENTRIES.from_columns(row) for row in rows]

    def lock_for_payout(self, entry_ids: Collection[str]) -> None:
        if self._connection.dialect.name != "postgresql" or not entry_ids:
            return
        parameters = {"ids": sorted(set(entry_ids))}
        dialect = self._connection.dialect
        with database_errors():
            compiled_for(_LOCK_PAYOUT_PAYMENTS, dialect).execute(self._connection, parameters)
            compiled_for(_LOCK_PAYOUT_BUCKETS, dialect).execute(self._connection, parameters)

    def payout_states(self, entry_ids: Collection[str]) -> EntryPayoutStates:
        ids = sorted(set(entry_ids))
        if not ids:
            return EntryPayoutStates()
        with database_errors():
            rows = compiled_for(_PAYOUT_STATES, self._connection.dialect).fetch_tuples(
                self._connection, {"ids": ids}
            )
        paid = frozenset(entry for entry, status in rows if status == _SUCCEEDED)
        processing = frozenset(entry for entry, status in rows if status in _LIVE_PAYOUT)
        return EntryPayoutStates(paid=paid, processing=processing)

    def entries(self, entry_ids: Collection[str]) -> list[CommissionEntry]:
        ids = sorted(set(entry_ids))
        if not ids:
            return []
        with database_errors():
            rows = compiled_for(_ENTRIES_BY_ID, self._connection.dialect).fetch_tuples(
                self._connection, {"ids": ids}
            )
        return sorted((_ENTRIES.from_columns(row) for row in rows), key=attrgetter("id"))

    def held_payments(self, payment_ids: Collection[str]) -> frozenset[str]:
        ids = sorted(set(payment_ids))
        if not ids:
            return frozenset()
        with database_errors():
            rows = compiled_for(_HELD_PAYMENTS, self._connection.dialect).fetch_tuples(
                self._connection, {"ids": ids}
            )
        return frozenset(row[0] for row in rows)
