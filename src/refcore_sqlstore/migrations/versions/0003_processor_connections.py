"""Payment-processor connections, and payments without a customer (docs/processor.md).

- ``processor_connections``: one row per claimed installation; the unique keys on
  ``active_app_mode`` and ``active_account_mode`` allow one active connection per App and mode
  and one App per processor account and mode.
- ``payments.customer_id``, ``program_id`` and ``referral_id`` become nullable: a processor payment
  that carried no identify metadata stays in history unattributed, with none of the three.

SQLite cannot drop a ``NOT NULL`` in place, and its usual table rebuild (copy into a new table,
drop the old one, rename) is refused at commit here: the migration runs in one transaction with
foreign keys on, so dropping ``payments`` counts every refund, dispute and ledger entry pointing at
it as a deferred violation that a rename never clears. The rebuild below drops first and then
inserts the rows back into the new ``payments``, which clears exactly those violations (and still
fails if any row were really lost). The table and index definitions are taken from the database
itself, so the rebuild keeps whatever earlier revisions created.

Revision ID: 0003_processor
Revises: 0002_selfservice
Create Date: 2026-11-22
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# Written out here rather than imported, so that this revision never changes with the code.
ID = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")
TIME = sa.DateTime(timezone=True)

revision: str = "0003_processor"
down_revision: str | None = "0002_selfservice"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OPTIONAL_PAYMENT_COLUMNS = ("customer_id", "program_id", "referral_id")


def upgrade() -> None:
    op.create_table(
        "processor_connections",
        sa.Column("id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("account_id", sa.Text(), nullable=False),
        sa.Column("webhook_secret_ciphertext", sa.Text(), nullable=False),
        sa.Column("install_nonce", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("connected_at", TIME, nullable=False),
        sa.Column("disconnected_at", TIME, nullable=True),
        sa.Column("active_app_mode", sa.Text(), nullable=True),
        sa.Column("active_account_mode", sa.Text(), nullable=True),
        sa.CheckConstraint("mode IN ('test', 'live')", name=op.f("ck_processor_connections_mode")),
        sa.ForeignKeyConstraint(
            ["app_id"],
            ["apps.id"],
            name=op.f("fk_processor_connections_app_id"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_processor_connections")),
        sa.UniqueConstraint("active_account_mode", name=op.f("uq_processor_connections_active_account_mode")),
        sa.UniqueConstraint("active_app_mode", name=op.f("uq_processor_connections_active_app_mode")),
        sa.UniqueConstraint("install_nonce", name=op.f("uq_processor_connections_install_nonce")),
    )
    op.create_index(
        op.f("ix_processor_connections_app_id_id"), "processor_connections", ["app_id", "id"], unique=False
    )
    _set_payment_columns_nullable(True)


def downgrade() -> None:
    """Fails if an unattributed processor payment exists: those rows have no customer to restore."""
    _set_payment_columns_nullable(False)
    op.drop_index(op.f("ix_processor_connections_app_id_id"), table_name="processor_connections")
    op.drop_table("processor_connections")


def _set_payment_columns_nullable(nullable: bool) -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_payments(nullable)
        return
    for column in _OPTIONAL_PAYMENT_COLUMNS:
        op.alter_column("payments", column, existing_type=ID, nullable=nullable)


def _rebuild_sqlite_payments(nullable: bool) -> None:
    bind = op.get_bind()
    table_sql = bind.execute(
        sa.text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'payments'")
    ).scalar_one()
    index_sql = [
        row[0]
        for row in bind.execute(
            sa.text(
                "SELECT sql FROM sqlite_master"
                " WHERE type = 'index' AND tbl_name = 'payments' AND sql IS NOT NULL"
            )
        )
    ]
    new_sql = table_sql
    for column in _OPTIONAL_PAYMENT_COLUMNS:
        before, after = ("TEXT NOT NULL", "TEXT") if nullable else ("TEXT", "TEXT NOT NULL")
        pattern = re.compile(rf"(\n\s*{column} ){before}(,)")
        new_sql, count = pattern.subn(rf"\g<1>{after}\g<2>", new_sql)
        if count != 1:
            raise RuntimeError(f"payments.{column} does not have the definition this migration expects")
    op.execute("CREATE TEMPORARY TABLE _payments_0003 AS SELECT * FROM payments")
    op.execute("DROP TABLE payments")
    op.execute(new_sql)
    op.execute("INSERT INTO payments SELECT * FROM _payments_0003")
    op.execute("DROP TABLE _payments_0003")
    for statement in index_sql:
        op.execute(statement)
