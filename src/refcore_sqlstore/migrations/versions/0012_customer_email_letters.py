"""Customers' e-mail addresses with a capital letter outside ASCII are lower-cased too.

Migration 0008 lower-cased the addresses stored before identify began to keep them lower-case,
but chose its rows with the database's ``lower``, which on SQLite folds only ASCII letters (and
on PostgreSQL only those of the database's character type: none beyond ASCII under ``C``). An
address such as ``Élodie@example.com`` was left as it was, while identify and the customers'
e-mail filter now look for ``élodie@example.com``: a read that had found the customer found
nothing after the upgrade, and the next identify made a second customer with a referral of its
own (found by a probe that upgraded a database).

This migration looks at every address with a character outside ASCII (its length in bytes is
not its length in characters) and writes Python's ``str.lower`` of it, the function identify
applies, where that differs. Addresses that are all ASCII were folded by 0008 already.

The old case is not kept, so the downgrade changes nothing back.

Revision ID: 0012_customer_email_letters
Revises: 0011_payout_request_links
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_customer_email_letters"
down_revision: str | None = "0011_payout_request_links"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: By dialect: an address with a character outside ASCII.
_BEYOND_ASCII = {
    "postgresql": "octet_length(email) <> char_length(email)",
    "sqlite": "length(CAST(email AS BLOB)) <> length(email)",
}


def upgrade() -> None:
    bind = op.get_bind()
    beyond_ascii = _BEYOND_ASCII[bind.dialect.name]
    rows = bind.execute(
        sa.text(f"SELECT id, email FROM customers WHERE email IS NOT NULL AND {beyond_ascii}")
    ).all()
    for customer_id, email in rows:
        if email != email.lower():
            bind.execute(
                sa.text("UPDATE customers SET email = :email WHERE id = :id"),
                {"email": email.lower(), "id": customer_id},
            )


def downgrade() -> None:
    pass  # the addresses' old case is not kept
