"""The initial schema: every table, key, index and check of ``refcore_sqlstore.tables``,
and the triggers that make the commission ledger append-only in the database itself.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# Written out here rather than imported, so that this revision never changes with the code.
ID = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")
TIME = sa.DateTime(timezone=True)

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    _create_tables()
    _make_ledger_append_only()


def _create_tables() -> None:
    op.create_table(
        "organizations",
        sa.Column("id", ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_organizations")),
    )
    op.create_table(
        "users",
        sa.Column("id", ID, nullable=False),
        sa.Column("email", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("email", name=op.f("uq_users_email")),
    )
    op.create_table(
        "apps",
        sa.Column("id", ID, nullable=False),
        sa.Column("organization_id", ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("live_revenue_source", sa.Text(), nullable=True),
        sa.Column("processor_connected_test", sa.Boolean(), nullable=False),
        sa.Column("processor_connected_live", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_apps_organization_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_apps")),
    )
    op.create_index(op.f("ix_apps_organization_id_id"), "apps", ["organization_id", "id"], unique=False)
    op.create_table(
        "memberships",
        sa.Column("id", ID, nullable=False),
        sa.Column("organization_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_memberships_organization_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_memberships_user_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memberships")),
        sa.UniqueConstraint(
            "organization_id", "user_id", name=op.f("uq_memberships_organization_id_user_id")
        ),
    )
    op.create_index(op.f("ix_memberships_user_id_id"), "memberships", ["user_id", "id"], unique=False)
    op.create_table(
        "sessions",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("token_digest", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_sessions_user_id"), initially="DEFERRED", deferrable=True
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_sessions_token_digest")),
    )
    op.create_table(
        "customers",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("external_customer_id", sa.Text(), nullable=True),
        sa.Column("email", sa.Text(), nullable=True),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_customers_mode")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_customers_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_customers")),
        sa.UniqueConstraint(
            "app_id",
            "mode",
            "external_customer_id",
            name=op.f("uq_customers_app_id_mode_external_customer_id"),
        ),
    )
    op.create_index(
        op.f("ix_customers_app_id_mode_email_id"),
        "customers",
        ["app_id", "mode", "email", "id"],
        unique=False,
    )
    op.create_index(op.f("ix_customers_app_id_mode_id"), "customers", ["app_id", "mode", "id"], unique=False)
    op.create_table(
        "events",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("claimed_at", TIME, nullable=True),
        sa.Column("delivered_at", TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_events_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index(op.f("ix_events_app_id_id"), "events", ["app_id", "id"], unique=False)
    op.create_index(
        "ix_events_undelivered",
        "events",
        ["id"],
        unique=False,
        sqlite_where=sa.text("delivered_at IS NULL"),
        postgresql_where=sa.text("delivered_at IS NULL"),
    )
    op.create_table(
        "programs",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("slug", sa.Text(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("commission_type", sa.Text(), nullable=False),
        sa.Column("commission_value", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("commission_duration_months", sa.Integer(), nullable=True),
        sa.Column("attribution_window_days", sa.Integer(), nullable=False),
        sa.Column("hold_days", sa.Integer(), nullable=False),
        sa.Column("minimum_payout", sa.Integer(), nullable=False),
        sa.Column("auto_approve", sa.Boolean(), nullable=False),
        sa.Column("promotion_code_fallback", sa.Boolean(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "commission_type IN ('percent', 'fixed')", name=op.f("ck_programs_commission_type")
        ),
        sa.CheckConstraint("commission_value >= 0", name=op.f("ck_programs_commission_value")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_programs_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_programs")),
        sa.UniqueConstraint("slug", name=op.f("uq_programs_slug")),
    )
    op.create_index(op.f("ix_programs_app_id_id"), "programs", ["app_id", "id"], unique=False)
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("secret_ciphertext", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.Column("deleted_at", TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_webhook_endpoints_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_endpoints")),
        sa.UniqueConstraint("app_id", name=op.f("uq_webhook_endpoints_app_id")),
    )
    op.create_table(
        "payout_batches",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("execution_count", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("dispatched_at", TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_payout_batches_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_payout_batches_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payout_batches")),
    )
    op.create_index(op.f("ix_payout_batches_app_id_id"), "payout_batches", ["app_id", "id"], unique=False)
    op.create_index(
        op.f("ix_payout_batches_program_id_id"), "payout_batches", ["program_id", "id"], unique=False
    )
    op.create_table(
        "program_affiliates",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("email", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("status_before_disable", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_program_affiliates_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_program_affiliates_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_program_affiliates")),
        sa.UniqueConstraint("program_id", "email", name=op.f("uq_program_affiliates_program_id_email")),
    )
    op.create_index(
        op.f("ix_program_affiliates_program_id_id"), "program_affiliates", ["program_id", "id"], unique=False
    )
    op.create_index(
        op.f("ix_program_affiliates_program_id_status_id"),
        "program_affiliates",
        ["program_id", "status", "id"],
        unique=False,
    )
    op.create_table(
        "program_terms",
        sa.Column("id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_program_terms_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_program_terms")),
    )
    op.create_index(
        op.f("ix_program_terms_program_id_id"), "program_terms", ["program_id", "id"], unique=False
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("event_id", ID, nullable=False),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_webhook_deliveries_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_webhook_deliveries_event_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
        sa.UniqueConstraint("event_id", name=op.f("uq_webhook_deliveries_event_id")),
    )
    op.create_index(
        op.f("ix_webhook_deliveries_app_id_id"), "webhook_deliveries", ["app_id", "id"], unique=False
    )
    op.create_table(
        "api_keys",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("digest", sa.Text(), nullable=False),
        sa.Column("last4", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("revoked_at", TIME, nullable=True),
        sa.Column("program_affiliate_id", ID, nullable=True),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_api_keys_mode")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_api_keys_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_api_keys_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("digest", name=op.f("uq_api_keys_digest")),
    )
    op.create_index(op.f("ix_api_keys_app_id_id"), "api_keys", ["app_id", "id"], unique=False)
    op.create_table(
        "links",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("deleted_at", TIME, nullable=True),
        sa.CheckConstraint("code = lower(code)", name=op.f("ck_links_code_lower_case")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_links_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_links_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_links_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_links")),
        sa.UniqueConstraint("code", name=op.f("uq_links_code")),
    )
    op.create_index(
        "ix_links_current_program_affiliate_id_id",
        "links",
        ["program_affiliate_id", "id"],
        unique=False,
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_table(
        "payout_details",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("method", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.Column("email", sa.Text(), nullable=True),
        sa.Column("account_holder", sa.Text(), nullable=True),
        sa.Column("iban", sa.Text(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_payout_details_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_payout_details_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_payout_details_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payout_details")),
        sa.UniqueConstraint("program_affiliate_id", name=op.f("uq_payout_details_program_affiliate_id")),
    )
    op.create_index(
        op.f("ix_payout_details_program_id_id"), "payout_details", ["program_id", "id"], unique=False
    )
    op.create_table(
        "payout_executions",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("batch_id", ID, nullable=True),
        sa.Column("completed_at", TIME, nullable=True),
        sa.Column("idempotency_key", sa.Text(), nullable=True),
        sa.Column("completed_manually", sa.Boolean(), nullable=False),
        sa.Column("outcome_reason", sa.Text(), nullable=True),
        sa.Column("live_program_affiliate_id", ID, nullable=True),
        sa.CheckConstraint("amount > 0", name=op.f("ck_payout_executions_positive_amount")),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_payout_executions_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["batch_id"],
            ["payout_batches.id"],
            name=op.f("fk_payout_executions_batch_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_payout_executions_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_payout_executions_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payout_executions")),
        sa.UniqueConstraint(
            "live_program_affiliate_id", name=op.f("uq_payout_executions_live_program_affiliate_id")
        ),
    )
    op.create_index(
        op.f("ix_payout_executions_batch_id_id"), "payout_executions", ["batch_id", "id"], unique=False
    )
    op.create_index(
        op.f("ix_payout_executions_program_affiliate_id_status_id"),
        "payout_executions",
        ["program_affiliate_id", "status", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_payout_executions_program_id_id"), "payout_executions", ["program_id", "id"], unique=False
    )
    op.create_table(
        "clicks",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("link_id", ID, nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("page", sa.Text(), nullable=True),
        sa.Column("referrer", sa.Text(), nullable=True),
        sa.Column("visitor_ip", sa.Text(), nullable=True),
        sa.Column("visitor_user_agent", sa.Text(), nullable=True),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_clicks_mode")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_clicks_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["link_id"], ["links.id"], name=op.f("fk_clicks_link_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_clicks_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_clicks_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clicks")),
    )
    op.create_index(op.f("ix_clicks_app_id_mode_id"), "clicks", ["app_id", "mode", "id"], unique=False)
    op.create_index(
        op.f("ix_clicks_app_id_mode_link_id_id"), "clicks", ["app_id", "mode", "link_id", "id"], unique=False
    )
    op.create_index(
        op.f("ix_clicks_app_id_mode_program_affiliate_id_id"),
        "clicks",
        ["app_id", "mode", "program_affiliate_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_clicks_app_id_mode_program_id_id"),
        "clicks",
        ["app_id", "mode", "program_id", "id"],
        unique=False,
    )
    op.create_table(
        "payout_requests",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("decided_at", TIME, nullable=True),
        sa.Column("payout_execution_id", ID, nullable=True),
        sa.Column("open_program_affiliate_id", ID, nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_payout_requests_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["payout_execution_id"],
            ["payout_executions.id"],
            name=op.f("fk_payout_requests_payout_execution_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_payout_requests_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_payout_requests_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payout_requests")),
        sa.UniqueConstraint(
            "open_program_affiliate_id", name=op.f("uq_payout_requests_open_program_affiliate_id")
        ),
    )
    op.create_index(op.f("ix_payout_requests_app_id_id"), "payout_requests", ["app_id", "id"], unique=False)
    op.create_index(
        op.f("ix_payout_requests_program_affiliate_id_id"),
        "payout_requests",
        ["program_affiliate_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_payout_requests_program_id_id"), "payout_requests", ["program_id", "id"], unique=False
    )
    op.create_table(
        "referrals",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("customer_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("attributed", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=True),
        sa.Column("click_id", ID, nullable=True),
        sa.Column("attribution_source", sa.Text(), nullable=True),
        sa.Column("promotion_code", sa.Text(), nullable=True),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_referrals_mode")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_referrals_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["click_id"],
            ["clicks.id"],
            name=op.f("fk_referrals_click_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_referrals_customer_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_referrals_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_referrals_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_referrals")),
        sa.UniqueConstraint("customer_id", name=op.f("uq_referrals_customer_id")),
    )
    op.create_index(
        op.f("ix_referrals_app_id_mode_click_id_id"),
        "referrals",
        ["app_id", "mode", "click_id", "id"],
        unique=False,
    )
    op.create_index(op.f("ix_referrals_app_id_mode_id"), "referrals", ["app_id", "mode", "id"], unique=False)
    op.create_index(
        op.f("ix_referrals_app_id_mode_program_affiliate_id_id"),
        "referrals",
        ["app_id", "mode", "program_affiliate_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_referrals_app_id_mode_program_id_id"),
        "referrals",
        ["app_id", "mode", "program_id", "id"],
        unique=False,
    )
    op.create_table(
        "payments",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("payment_id", sa.Text(), nullable=False),
        sa.Column("customer_id", ID, nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("referral_id", ID, nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("attributed", sa.Boolean(), nullable=False),
        sa.Column("commission_amount", sa.Integer(), nullable=False),
        sa.Column("available_at", TIME, nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=True),
        sa.Column("refunded_amount", sa.Integer(), nullable=False),
        sa.Column("disputed_amount", sa.Integer(), nullable=False),
        sa.Column("lost_amount", sa.Integer(), nullable=False),
        sa.Column("open_dispute_count", sa.Integer(), nullable=False),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_payments_mode")),
        sa.CheckConstraint(
            "amount >= 0 AND refunded_amount >= 0 AND disputed_amount >= 0 AND lost_amount >= 0"
            " AND open_dispute_count >= 0 AND commission_amount >= 0",
            name=op.f("ck_payments_non_negative"),
        ),
        sa.CheckConstraint(
            "refunded_amount + disputed_amount <= amount", name=op.f("ck_payments_consumption_within_amount")
        ),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_payments_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_payments_customer_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_payments_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_payments_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["referral_id"],
            ["referrals.id"],
            name=op.f("fk_payments_referral_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payments")),
        sa.UniqueConstraint("app_id", "mode", "payment_id", name=op.f("uq_payments_app_id_mode_payment_id")),
    )
    op.create_index(
        op.f("ix_payments_app_id_mode_customer_id_id"),
        "payments",
        ["app_id", "mode", "customer_id", "id"],
        unique=False,
    )
    op.create_index(op.f("ix_payments_app_id_mode_id"), "payments", ["app_id", "mode", "id"], unique=False)
    op.create_index(
        op.f("ix_payments_app_id_mode_program_affiliate_id_id"),
        "payments",
        ["app_id", "mode", "program_affiliate_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_payments_app_id_mode_program_id_id"),
        "payments",
        ["app_id", "mode", "program_id", "id"],
        unique=False,
    )
    op.create_table(
        "commission_entries",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("program_id", ID, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("transaction_id", ID, nullable=False),
        sa.Column("source_id", ID, nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("available_at", TIME, nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_commission_entries_mode")),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_commission_entries_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_commission_entries_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_id"],
            ["programs.id"],
            name=op.f("fk_commission_entries_program_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["payments.id"],
            name=op.f("fk_commission_entries_transaction_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_commission_entries")),
    )
    op.create_index(
        op.f("ix_commission_entries_app_id_mode_id"),
        "commission_entries",
        ["app_id", "mode", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_commission_entries_app_id_mode_program_affiliate_id_id"),
        "commission_entries",
        ["app_id", "mode", "program_affiliate_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_commission_entries_app_id_mode_program_id_id"),
        "commission_entries",
        ["app_id", "mode", "program_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_commission_entries_app_id_mode_transaction_id_id"),
        "commission_entries",
        ["app_id", "mode", "transaction_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_commission_entries_program_affiliate_id_mode_id"),
        "commission_entries",
        ["program_affiliate_id", "mode", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_commission_entries_transaction_id_id"),
        "commission_entries",
        ["transaction_id", "id"],
        unique=False,
    )
    op.create_table(
        "disputes",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("dispute_id", sa.Text(), nullable=False),
        sa.Column("payment_id", sa.Text(), nullable=False),
        sa.Column("transaction_id", ID, nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_disputes_mode")),
        sa.CheckConstraint("amount > 0", name=op.f("ck_disputes_positive_amount")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_disputes_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["payments.id"],
            name=op.f("fk_disputes_transaction_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_disputes")),
        sa.UniqueConstraint("app_id", "mode", "dispute_id", name=op.f("uq_disputes_app_id_mode_dispute_id")),
    )
    op.create_index(op.f("ix_disputes_app_id_mode_id"), "disputes", ["app_id", "mode", "id"], unique=False)
    op.create_index(
        op.f("ix_disputes_app_id_mode_payment_id_id"),
        "disputes",
        ["app_id", "mode", "payment_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_disputes_app_id_mode_status_id"),
        "disputes",
        ["app_id", "mode", "status", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_disputes_app_id_mode_transaction_id_id"),
        "disputes",
        ["app_id", "mode", "transaction_id", "id"],
        unique=False,
    )
    op.create_table(
        "refunds",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("refund_id", sa.Text(), nullable=False),
        sa.Column("payment_id", sa.Text(), nullable=False),
        sa.Column("transaction_id", ID, nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_refunds_mode")),
        sa.CheckConstraint("amount > 0", name=op.f("ck_refunds_positive_amount")),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_refunds_app_id"), initially="DEFERRED", deferrable=True
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["payments.id"],
            name=op.f("fk_refunds_transaction_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refunds")),
        sa.UniqueConstraint("app_id", "mode", "refund_id", name=op.f("uq_refunds_app_id_mode_refund_id")),
    )
    op.create_index(op.f("ix_refunds_app_id_mode_id"), "refunds", ["app_id", "mode", "id"], unique=False)
    op.create_index(
        op.f("ix_refunds_app_id_mode_payment_id_id"),
        "refunds",
        ["app_id", "mode", "payment_id", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_refunds_app_id_mode_transaction_id_id"),
        "refunds",
        ["app_id", "mode", "transaction_id", "id"],
        unique=False,
    )
    op.create_table(
        "payout_items",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("execution_id", ID, nullable=False),
        sa.Column("entry_id", ID, nullable=False),
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("active_entry_id", ID, nullable=True),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_payout_items_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["entry_id"],
            ["commission_entries.id"],
            name=op.f("fk_payout_items_entry_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["execution_id"],
            ["payout_executions.id"],
            name=op.f("fk_payout_items_execution_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["program_affiliate_id"],
            ["program_affiliates.id"],
            name=op.f("fk_payout_items_program_affiliate_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payout_items")),
        sa.UniqueConstraint("active_entry_id", name=op.f("uq_payout_items_active_entry_id")),
    )
    op.create_index(op.f("ix_payout_items_entry_id_id"), "payout_items", ["entry_id", "id"], unique=False)
    op.create_index(
        op.f("ix_payout_items_execution_id_id"), "payout_items", ["execution_id", "id"], unique=False
    )
    op.create_index(
        op.f("ix_payout_items_program_affiliate_id_id"),
        "payout_items",
        ["program_affiliate_id", "id"],
        unique=False,
    )


#: PostgreSQL: any UPDATE or DELETE of a ledger row fails, whoever sends it.
_POSTGRESQL_APPEND_ONLY = (
    """
    CREATE FUNCTION refcore_reject_ledger_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'commission_entries is append-only: % refused', TG_OP
            USING ERRCODE = 'restrict_violation';
    END
    $$
    """,
    """
    CREATE TRIGGER commission_entries_append_only
    BEFORE UPDATE OR DELETE ON commission_entries
    FOR EACH ROW EXECUTE FUNCTION refcore_reject_ledger_change()
    """,
)

#: SQLite: the same rule with its own trigger syntax.
_SQLITE_APPEND_ONLY = (
    """
    CREATE TRIGGER commission_entries_no_update BEFORE UPDATE ON commission_entries
    BEGIN SELECT RAISE(ABORT, 'commission_entries is append-only: UPDATE refused'); END
    """,
    """
    CREATE TRIGGER commission_entries_no_delete BEFORE DELETE ON commission_entries
    BEGIN SELECT RAISE(ABORT, 'commission_entries is append-only: DELETE refused'); END
    """,
)


def _make_ledger_append_only() -> None:
    dialect = op.get_bind().dialect.name
    statements = _POSTGRESQL_APPEND_ONLY if dialect == "postgresql" else _SQLITE_APPEND_ONLY
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER commission_entries_append_only ON commission_entries")
        op.execute("DROP FUNCTION refcore_reject_ledger_change()")
    else:
        op.execute("DROP TRIGGER commission_entries_no_update")
        op.execute("DROP TRIGGER commission_entries_no_delete")
    for table in _TABLES_IN_CREATION_ORDER[::-1]:
        op.drop_table(table)


_TABLES_IN_CREATION_ORDER = (
    "organizations",
    "users",
    "apps",
    "memberships",
    "sessions",
    "customers",
    "events",
    "programs",
    "webhook_endpoints",
    "payout_batches",
    "program_affiliates",
    "program_terms",
    "webhook_deliveries",
    "api_keys",
    "links",
    "payout_details",
    "payout_executions",
    "clicks",
    "payout_requests",
    "referrals",
    "payments",
    "commission_entries",
    "disputes",
    "refunds",
    "payout_items",
)
