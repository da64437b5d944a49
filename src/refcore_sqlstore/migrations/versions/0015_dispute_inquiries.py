"""A dispute remembers whether the processor reported it as an inquiry: ``disputes.inquiry``.

An open inquiry holds its payment's commission but consumes none of the payment, so that a
refund made during it is recorded (``refcore.rules.disputes``); before, the inquiry counted in
``payments.disputed_amount`` and the refund was refused until the processor stopped retrying it.
Existing disputes get ``false``: which of them were inquiries was not kept, so an inquiry open
during the upgrade still consumes its amount until it closes or escalates.

The column has a server default so that a server of the earlier release, which does not name
it, can still insert disputes during a rolling upgrade.

Revision ID: 0015_dispute_inquiries
Revises: 0014_delivery_modes
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_dispute_inquiries"
down_revision: str | None = "0014_delivery_modes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("disputes", sa.Column("inquiry", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    """Earlier code counts every open dispute in ``disputed_amount``, where refunds made during
    an inquiry may have left no room for it. So an open inquiry is closed as ``withdrawn``, its
    hold released: the nearest state earlier code can hold that never refuses a refund."""
    op.execute(
        "UPDATE payments SET open_dispute_count = open_dispute_count - ("
        "SELECT count(*) FROM disputes d"
        " WHERE d.transaction_id = payments.id AND d.inquiry AND d.status = 'opened')"
        " WHERE id IN (SELECT transaction_id FROM disputes WHERE inquiry AND status = 'opened')"
    )
    op.execute("UPDATE disputes SET status = 'withdrawn' WHERE inquiry AND status = 'opened'")
    op.drop_column("disputes", "inquiry")
