"""An index for pruning the balance projection by grain and bucket (issue 9).

:mod:`refcore_sqlstore.bucket_pruning` deletes the day, hour and minute rows of the past that no
balance reads any more. The primary key starts with the affiliate, so without this index each of
its batches would read the whole table to find rows of one grain before a cutoff; with it, a
batch reads only the rows it deletes. The projection's upserts change amounts only, never a
row's grain or bucket, so the index costs a write only when a bucket row is first made.

Revision ID: 0006_bucket_pruning
Revises: 0005_balance_read_cost
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006_bucket_pruning"
down_revision: str | None = "0005_balance_read_cost"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "affiliate_balance_buckets"
_INDEX = "ix_affiliate_balance_buckets_grain_bucket"


def upgrade() -> None:
    op.create_index(_INDEX, _TABLE, ["grain", "bucket"])


def downgrade() -> None:
    op.drop_index(_INDEX, table_name=_TABLE)
