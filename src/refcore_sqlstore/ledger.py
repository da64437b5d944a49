"""Ledger reads on SQL: an affiliate's balance in one aggregate query.

The statuses follow the core's precedence (see :mod:`refcore.ports.ledger`), computed so that
the database touches as little as it can:

- ``paid`` and ``processing`` are the sums of the affiliate's ``succeeded`` and of its
  ``prepared``/``ready`` payout executions: an execution's amount is the sum of its items, each
  holding one entry (the payouts' invariant, :class:`~refcore.models.payout.PayoutExecution`),
  so a year of paid history costs one row per payout instead of one per entry;
- every other entry (no live or succeeded payout item holds it: one probe of the unique
  ``active_entry_id`` index, no row read) is ``held`` when its payment has an open dispute,
  ``pending`` before its ``available_at``, else ``approved``.

The entries are read through the ``(program_affiliate_id, mode, id)`` index, payments by primary
key, executions through ``(program_affiliate_id, status, id)``. The sums are conditional
aggregates rather than a ``GROUP BY``, so no temporary table is built.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, bindparam, case, exists, func, literal, select

from refcore.models import EntryStatus, Mode
from refcore.models.payout import PayoutExecutionStatus
from refcore.ports.ledger import EntryPayoutStates
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.tables import commission_entries, payments, payout_executions, payout_items

_LIVE_PAYOUT = (PayoutExecutionStatus.PREPARED.value, PayoutExecutionStatus.READY.value)
_SUCCEEDED = PayoutExecutionStatus.SUCCEEDED.value

#: Built once: lookups by a list of IDs (``IN``, one bound list) through the primary or a
#: unique key.
_PAYOUT_STATES = (
    select(payout_items.c.entry_id, payout_executions.c.status)
    .select_from(payout_items.join(payout_executions, payout_executions.c.id == payout_items.c.execution_id))
    .where(payout_items.c.active_entry_id.in_(bindparam("ids", expanding=True)))
)
_HELD_PAYMENTS = select(payments.c.id).where(
    payments.c.id.in_(bindparam("ids", expanding=True)), payments.c.open_dispute_count > 0
)


def _execution_sum(program_affiliate_id: str, status: ColumnElement[bool]) -> Any:
    x = payout_executions
    return (
        select(func.coalesce(func.sum(x.c.amount), 0))
        .where(x.c.program_affiliate_id == program_affiliate_id, status)
        .scalar_subquery()
    )


def _entry_sum(condition: ColumnElement[bool]) -> Any:
    e = commission_entries
    return func.coalesce(func.sum(case((condition, e.c.amount), else_=0)), 0)


class SqlLedgerReads:
    """Implements :class:`refcore.ports.ledger.LedgerReads` inside one unit of work's connection."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def status_sums(self, program_affiliate_id: str, mode: Mode, now: datetime) -> Mapping[EntryStatus, int]:
        e, p, i, x = commission_entries, payments, payout_items, payout_executions
        affiliate = program_affiliate_id
        if mode is Mode.LIVE:  # payouts are Live only
            paid: Any = _execution_sum(affiliate, x.c.status == _SUCCEEDED)
            processing: Any = _execution_sum(affiliate, x.c.status.in_(_LIVE_PAYOUT))
        else:
            paid = processing = literal(0)
        held = func.coalesce(p.c.open_dispute_count, 0) > 0
        pending = and_(~held, e.c.available_at > now)
        approved = and_(~held, e.c.available_at <= now)
        in_a_payout = exists().where(i.c.active_entry_id == e.c.id)
        statement = (
            select(paid, processing, _entry_sum(held), _entry_sum(pending), _entry_sum(approved))
            .select_from(e.outerjoin(p, p.c.id == e.c.transaction_id))
            .where(e.c.program_affiliate_id == affiliate, e.c.mode == mode.value, ~in_a_payout)
        )
        with database_errors():
            row = self._connection.execute(statement).one()
        order = (
            EntryStatus.PAID,
            EntryStatus.PROCESSING,
            EntryStatus.HELD,
            EntryStatus.PENDING,
            EntryStatus.APPROVED,
        )
        return {status: int(value or 0) for status, value in zip(order, row, strict=True)}

    def payout_states(self, entry_ids: Collection[str]) -> EntryPayoutStates:
        ids = sorted(set(entry_ids))
        if not ids:
            return EntryPayoutStates()
        with database_errors():
            rows = self._connection.execute(_PAYOUT_STATES, {"ids": ids}).all()
        paid = frozenset(entry for entry, status in rows if status == _SUCCEEDED)
        processing = frozenset(entry for entry, status in rows if status in _LIVE_PAYOUT)
        return EntryPayoutStates(paid=paid, processing=processing)

    def held_payments(self, payment_ids: Collection[str]) -> frozenset[str]:
        ids = sorted(set(payment_ids))
        if not ids:
            return frozenset()
        with database_errors():
            rows = self._connection.execute(_HELD_PAYMENTS, {"ids": ids}).all()
        return frozenset(row[0] for row in rows)
