"""Hosted signups, rate-limit counters, App agreement versions and logos; and the indexes that
let the setup status and overview aggregate activity by one index range (decisions 6).

Revision ID: 0002_selfservice
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# Written out here rather than imported, so that this revision never changes with the code.
ID = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")
TIME = sa.DateTime(timezone=True)

revision: str = "0002_selfservice"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{table}_{column}"),
        initially="DEFERRED",
        deferrable=True,
    )


#: (index name, table, columns) of the aggregate reads of ``refcore.ports.metrics``.
_METRIC_INDEXES = (
    ("ix_clicks_app_id_mode_created_at", "clicks", ["app_id", "mode", "created_at"]),
    (
        "ix_referrals_app_id_mode_attributed_created_at",
        "referrals",
        ["app_id", "mode", "attributed", "created_at"],
    ),
    (
        "ix_payments_app_id_mode_attributed_created_at",
        "payments",
        ["app_id", "mode", "attributed", "created_at"],
    ),
    (
        "ix_commission_entries_app_id_mode_kind_created_at",
        "commission_entries",
        ["app_id", "mode", "kind", "created_at"],
    ),
    (
        "ix_payout_executions_app_id_status_completed_at",
        "payout_executions",
        ["app_id", "status", "completed_at"],
    ),
)


def upgrade() -> None:
    op.create_table(
        "pending_signups",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("email", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("token_digest", sa.Text(), nullable=False),
        sa.Column("expires_at", TIME, nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("confirmed_at", TIME, nullable=True),
        sa.Column("program_affiliate_id", ID, nullable=True),
        _fk("pending_signups", "app_id", "apps"),
        _fk("pending_signups", "program_id", "programs"),
        _fk("pending_signups", "program_affiliate_id", "program_affiliates"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pending_signups")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_pending_signups_token_digest")),
    )
    op.create_index(
        op.f("ix_pending_signups_program_id_id"), "pending_signups", ["program_id", "id"], unique=False
    )
    op.create_table(
        "rate_limit_counters",
        sa.Column("id", ID, nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("window_start", TIME, nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.CheckConstraint("count >= 0", name=op.f("ck_rate_limit_counters_non_negative_count")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rate_limit_counters")),
        sa.UniqueConstraint("key", "window_start", name=op.f("uq_rate_limit_counters_key_window_start")),
    )
    op.create_table(
        "agreement_versions",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        _fk("agreement_versions", "app_id", "apps"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agreement_versions")),
    )
    op.create_index(
        op.f("ix_agreement_versions_app_id_id"), "agreement_versions", ["app_id", "id"], unique=False
    )
    op.create_table(
        "app_logos",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.Column("content_type", sa.Text(), nullable=True),
        sa.Column("data", sa.LargeBinary(), nullable=True),
        sa.Column("sha256", sa.Text(), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.CheckConstraint("size >= 0 AND size <= 1048576", name=op.f("ck_app_logos_size_at_most_1_mib")),
        _fk("app_logos", "app_id", "apps"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_app_logos")),
        sa.UniqueConstraint("app_id", name=op.f("uq_app_logos_app_id")),
    )
    for name, table, columns in _METRIC_INDEXES:
        op.create_index(op.f(name), table, columns, unique=False)


def downgrade() -> None:
    for name, table, _columns in reversed(_METRIC_INDEXES):
        op.drop_index(op.f(name), table_name=table)
    for table in ("app_logos", "agreement_versions", "rate_limit_counters", "pending_signups"):
        op.drop_table(table)
