"""Every link of an affiliate, deleted ones included, is one index range: ``ix_links_program_affiliate_id``.

An affiliate key may create a bounded number of links, deleted ones counted too (their codes
stay taken; docs/decisions.md). The only index by affiliate holds its current links (partial,
``deleted_at IS NULL``), so counting them all read the whole ``links`` table of the
installation for each link created (``tests/sqlstore/test_query_plans.py`` caught it once the
workload created one).

Revision ID: 0016_links_of_an_affiliate
Revises: 0015_dispute_inquiries
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0016_links_of_an_affiliate"
down_revision: str | None = "0015_dispute_inquiries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(op.f("ix_links_program_affiliate_id"), "links", ["program_affiliate_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_links_program_affiliate_id"), table_name="links")
