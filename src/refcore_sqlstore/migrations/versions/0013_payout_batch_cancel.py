"""A prepared payout batch can be canceled: ``payout_batches.canceled_at`` (docs/payouts.md).

A batch prepared by mistake could be released only by dispatching it, which announces every
payout to the App's payout system, and then reporting each one failed. ``POST
/v1/payout-batches/:id/cancel`` now moves a prepared batch to ``canceled`` and its executions to
``canceled``, releasing their entries. The statuses are text without a check, and the payout sums'
triggers (migration 0009) already take a move out of ``prepared`` into a status they do not count
out of the in-flight sum, so the only schema change is the batch's time of cancellation. Existing
batches keep ``NULL``: none was ever canceled.

Revision ID: 0013_payout_batch_cancel
Revises: 0012_customer_email_letters
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_payout_batch_cancel"
down_revision: str | None = "0012_customer_email_letters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("payout_batches", sa.Column("canceled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    """Earlier code knows neither status: a canceled execution becomes ``failed`` (its entries
    are released either way) and a canceled batch ``dispatched`` at its time of cancellation,
    the nearest states it can read with nothing left in flight."""
    op.execute("UPDATE payout_executions SET status = 'failed' WHERE status = 'canceled'")
    op.execute(
        "UPDATE payout_batches SET status = 'dispatched', dispatched_at = canceled_at"
        " WHERE status = 'canceled'"
    )
    op.drop_column("payout_batches", "canceled_at")
