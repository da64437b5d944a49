"""Each delivery record says which mode's history lists it: ``listed_in_test``, ``listed_in_live``.

The delivery history of an App listed every delivery to every credential, so a Test key read the
deliveries of Live events (their IDs, types, timing and the receiver's answers; probe J). A key
now reads its own mode's deliveries only, a session the mode it names, and the mode is part of the
store's query (one index range per mode), so that a page and its ``has_more`` count that mode's
records alone.

Existing records take their event's ``livemode``; a ``webhook.test`` delivery is listed in both
modes (either mode's key may send one, and it carries only the endpoint's configuration). The
columns are added with the default ``false`` so that existing rows can take them before the
backfill; every record written from now on sets both.

Revision ID: 0014_delivery_modes
Revises: 0013_payout_batch_cancel
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_delivery_modes"
down_revision: str | None = "0013_payout_batch_cancel"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "webhook_deliveries"
#: By column: the event ``livemode`` whose deliveries that mode's history lists.
_LIVEMODE = {"listed_in_test": "NOT events.livemode", "listed_in_live": "events.livemode"}


def upgrade() -> None:
    for column in _LIVEMODE:
        op.add_column(_TABLE, sa.Column(column, sa.Boolean(), nullable=False, server_default=sa.false()))
        op.create_index(
            op.f(f"ix_{_TABLE}_app_id_{column}_id"), _TABLE, ["app_id", column, "id"], unique=False
        )
    _backfill()


def _backfill() -> None:
    """Each existing record takes its event's mode; the test ping both. After the schema
    changes, which PostgreSQL refuses on a table with foreign key checks still pending."""
    listed = ", ".join(
        f"{column} = (event_type = 'webhook.test' OR EXISTS ("
        f"SELECT 1 FROM events WHERE events.id = {_TABLE}.event_id AND {livemode}))"
        for column, livemode in _LIVEMODE.items()
    )
    op.execute(f"UPDATE {_TABLE} SET {listed}")


def downgrade() -> None:
    for column in _LIVEMODE:
        op.drop_index(op.f(f"ix_{_TABLE}_app_id_{column}_id"), table_name=_TABLE)
        op.drop_column(_TABLE, column)
