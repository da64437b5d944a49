"""Payout amounts are 64-bit on PostgreSQL: a sum of money need not fit where one amount does.

One amount (a payment, refund or dispute) fits a signed 32-bit integer (interface 2.2), and so
does each commission entry and payout item, which are never more than their payment. A payout
is a sum of entries, and a batch a sum of payouts: two payments of 2,147,483,647 at a 100 %
commission make an affiliate's balance 4,294,967,294. On PostgreSQL ``payout_executions.amount``,
``payout_requests.amount`` and ``payout_batches.total`` were ``integer`` (int4), so paying that
balance failed on every try with ``integer out of range``, answered as ``500``, and the money
could never be paid. They become ``bigint``. SQLite's ``INTEGER`` already holds 64 bits, so
nothing changes there.

``ALTER COLUMN ... TYPE bigint`` rewrites each table and its indexes under an exclusive lock;
payout tables hold one row per payout, not per event, so this is short. A server still running
the older code must be restarted once this has run: it reads the same values as Python integers,
but the statements it has prepared on its PostgreSQL connections fail with ``cached plan must not
change result type`` (found by a probe that upgraded under load; docs/deployment.md).

Revision ID: 0007_money_sums
Revises: 0006_bucket_pruning
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_money_sums"
down_revision: str | None = "0006_bucket_pruning"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = (
    ("payout_batches", "total"),
    ("payout_executions", "amount"),
    ("payout_requests", "amount"),
)


def _alter(type_: sa.types.TypeEngine[int]) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite: INTEGER is already 64-bit
    for table, column in _COLUMNS:
        op.alter_column(table, column, type_=type_, existing_nullable=False)


def upgrade() -> None:
    _alter(sa.BigInteger())


def downgrade() -> None:
    # Fails, changing nothing, while any payout holds an amount beyond 32 bits.
    _alter(sa.Integer())
