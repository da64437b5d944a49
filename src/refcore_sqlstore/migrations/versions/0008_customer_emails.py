"""Customers' e-mail addresses are kept lower-case, as every other address refcore keeps.

Identify had stored a customer's ``email`` as sent, and finds a customer known only by e-mail by
that exact text, so ``Case@X.example`` and ``case@x.example`` became two customers with a
referral each: the second identify bypassed "first attribution wins". Identify now lower-cases
the address; this migration lower-cases the addresses stored before, so that a later identify
finds them. Only rows whose address changes are written (``email <> lower(email)``: on
PostgreSQL ``lower`` folds every letter, on SQLite only ASCII ones, which are all but every
address); each gets Python's ``str.lower``, the function identify applies.

The old case is not kept, so the downgrade changes nothing back. A server still running the
older code keeps working: it stores new addresses as sent until it is replaced.

Revision ID: 0008_customer_emails
Revises: 0007_money_sums
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_customer_emails"
down_revision: str | None = "0007_money_sums"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    bind = op.get_bind()
    mixed = bind.execute(
        sa.text("SELECT id, email FROM customers WHERE email IS NOT NULL AND email <> lower(email)")
    ).all()
    for customer_id, email in mixed:
        bind.execute(
            sa.text("UPDATE customers SET email = :email WHERE id = :id"),
            {"email": email.lower(), "id": customer_id},
        )


def downgrade() -> None:
    pass  # the addresses' old case is not kept
