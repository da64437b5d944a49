"""A payout report's ``Idempotency-Key`` names one report App-wide (interface 6.5, docs/payouts.md).

The interface asks for a unique ``Idempotency-Key`` on each report of a payout execution's
outcome. Until now the key was only kept on the execution it settled, so a key spent on one
execution was taken again on another as a new report. ``payout_report_keys`` holds one row per
report, keyed by the execution, with ``(app_id, idempotency_key)`` unique: a second execution
reported with a spent key is refused with ``409 idempotency_conflict``, and two servers racing to
spend one key on two executions are told apart by the constraint.

The backfill registers each App's existing keys, the earliest report of each key winning
(``completed_at``, then the execution's ID). An execution that an earlier version settled with a
key already spent is left out of the table, but keeps its key on the execution, so a replay of its
own report is still answered as one. On PostgreSQL the backfill first takes a ``SHARE`` lock on
``payout_executions``, so no report that an older server commits during the migration falls
between its snapshot and the commit; a report an older server makes after the migration (a rolling
upgrade) is not registered, as before this revision.

Revision ID: 0010_payout_report_keys
Revises: 0009_payout_sums
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# Written out here rather than imported, so that this revision never changes with the code.
ID = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")
TIME = sa.DateTime(timezone=True)

revision: str = "0010_payout_report_keys"
down_revision: str | None = "0009_payout_sums"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "payout_report_keys"

_BACKFILL = f"""
    INSERT INTO {_TABLE} (id, app_id, idempotency_key, created_at)
    SELECT ranked.id, ranked.app_id, ranked.idempotency_key, ranked.completed_at
    FROM (
        SELECT x.id, x.app_id, x.idempotency_key, x.completed_at,
               ROW_NUMBER() OVER (
                   PARTITION BY x.app_id, x.idempotency_key ORDER BY x.completed_at, x.id
               ) AS earliest
        FROM payout_executions AS x
        WHERE x.idempotency_key IS NOT NULL
    ) AS ranked
    WHERE ranked.earliest = 1
"""


def _fk(column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{_TABLE}_{column}"),
        initially="DEFERRED",
        deferrable=True,
    )


def upgrade() -> None:
    op.create_table(
        _TABLE,
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("idempotency_key", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        _fk("id", "payout_executions"),
        _fk("app_id", "apps"),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{_TABLE}")),
        sa.UniqueConstraint("app_id", "idempotency_key", name=op.f(f"uq_{_TABLE}_app_id_idempotency_key")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("LOCK TABLE payout_executions IN SHARE MODE")
    op.execute(_BACKFILL)


def downgrade() -> None:
    op.drop_table(_TABLE)
