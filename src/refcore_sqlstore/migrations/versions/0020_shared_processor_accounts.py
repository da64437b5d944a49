"""A processor account may be claimed by more than one App: its unique key becomes an index.

``uq_processor_connections_active_account_mode`` refused a second App's claim of an account already
connected in that mode. refcore cannot tell who owns an account (a claim shows only its ID and a
secret), so anyone could claim another tenant's account first, with an invented secret: its owner's
claim was then refused, its deliveries checked against the invented secret and refused, and the
refusal told the claimer that the account was connected (probe AG). A delivery now belongs to the
active connection whose secret its signature verifies with (``docs/processor.md``); the column
still finds an account's active connections, through a plain index.

On SQLite a table's unique constraint cannot be dropped, so the table is copied (Alembic's batch
mode); it holds one row an installation.

Revision ID: 0020_shared_processor_accounts
Revises: 0019_composed_email_addresses
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020_shared_processor_accounts"
down_revision: str | None = "0019_composed_email_addresses"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNIQUE = "uq_processor_connections_active_account_mode"
_INDEX = "ix_processor_connections_active_account_mode"


def upgrade() -> None:
    with op.batch_alter_table("processor_connections") as batch:
        batch.drop_constraint(_UNIQUE, type_="unique")
        batch.create_index(_INDEX, ["active_account_mode"], unique=False)


def downgrade() -> None:
    """Fails where two active connections share an account and mode: disconnect all but one first."""
    with op.batch_alter_table("processor_connections") as batch:
        batch.drop_index(_INDEX)
        batch.create_unique_constraint(_UNIQUE, ["active_account_mode"])
