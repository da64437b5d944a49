"""Ledger reads on SQL: an affiliate's balance in one aggregate query.

The status of each entry is derived inside the query with the core's precedence (see
:mod:`refcore.ports.ledger`): its payout item's execution (``paid``, ``processing``), then its
payment's open disputes (``held``), then its hold (``pending``), else ``approved``. The entries
are read through the ``(program_affiliate_id, mode, id)`` index and every join is a primary or
unique key lookup, so the database does the work row by row without sending a row to Python.
The sums are conditional aggregates rather than a ``GROUP BY``, so no temporary table is built.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import Connection, bindparam, case, func, select

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


class SqlLedgerReads:
    """Implements :class:`refcore.ports.ledger.LedgerReads` inside one unit of work's connection."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def status_sums(self, program_affiliate_id: str, mode: Mode, now: datetime) -> Mapping[EntryStatus, int]:
        e, p, i, x = commission_entries, payments, payout_items, payout_executions
        status = case(
            (x.c.status == _SUCCEEDED, EntryStatus.PAID.value),
            (x.c.status.in_(_LIVE_PAYOUT), EntryStatus.PROCESSING.value),
            (p.c.open_dispute_count > 0, EntryStatus.HELD.value),
            (e.c.available_at > now, EntryStatus.PENDING.value),
            else_=EntryStatus.APPROVED.value,
        ).label("status")
        derived = (
            select(e.c.amount, status)
            .select_from(
                e.outerjoin(p, p.c.id == e.c.transaction_id)
                .outerjoin(i, i.c.active_entry_id == e.c.id)
                .outerjoin(x, x.c.id == i.c.execution_id)
            )
            .where(e.c.program_affiliate_id == program_affiliate_id, e.c.mode == mode.value)
            .subquery()
        )
        order = list(EntryStatus)
        statement = select(
            *(
                func.coalesce(func.sum(case((derived.c.status == s.value, derived.c.amount), else_=0)), 0)
                for s in order
            )
        )
        with database_errors():
            row = self._connection.execute(statement).one()
        return {s: int(value) for s, value in zip(order, row, strict=True)}

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
