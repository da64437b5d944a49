"""Stored e-mail addresses are composed (NFC), as refcore now keeps and looks them up.

Since this release every address refcore keeps (users, program affiliates, pending signups,
customers) is lower-cased and, outside ASCII, in Unicode's composed form NFC
(``refcore.validation.address_key``), and every lookup composes the address it is given. An
address stored decomposed before (``jose`` and U+0301) was then found by no spelling: an upgrade
probe saw ``refcore session --end-all`` end only a new user's session and report success while
the departed user's stayed valid, identify make a second customer with a second referral, and a
second affiliate of the same program join under the address.

This migration writes each such address in the form the code gives it (lower-cased, then NFC;
``str.strip`` as well, a no-op for any address refcore accepted). Where the composed address is
already taken under a unique key (a user of that address, an affiliate of that program), the
row is left as it is: two records of one person cannot be merged here; docs/deployment.md says
how to find them. The old form is not kept, so the downgrade changes nothing back.

Revision ID: 0019_composed_email_addresses
Revises: 0018_reversals_never_held
Create Date: 2026-11-28
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_composed_email_addresses"
down_revision: str | None = "0018_reversals_never_held"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: By dialect: an address with a character outside ASCII.
_BEYOND_ASCII = {
    "postgresql": "octet_length(email) <> char_length(email)",
    "sqlite": "length(CAST(email AS BLOB)) <> length(email)",
}

#: Each table with addresses, and the other columns of its unique key on ``email`` (``None``:
#: no unique key).
_TABLES: dict[str, tuple[str, ...] | None] = {
    "users": (),
    "program_affiliates": ("program_id",),
    "pending_signups": None,
    "customers": None,
}


def _composed(address: str) -> str:
    lowered = address.strip().lower()
    return lowered if lowered.isascii() else unicodedata.normalize("NFC", lowered)


def upgrade() -> None:
    bind = op.get_bind()
    beyond_ascii = _BEYOND_ASCII[bind.dialect.name]
    for table, key in _TABLES.items():
        columns = ", ".join(("id", "email", *(key or ())))
        rows = bind.execute(
            sa.text(f"SELECT {columns} FROM {table} WHERE email IS NOT NULL AND {beyond_ascii}")
        ).all()
        for row in rows:
            record_id, email, *key_values = row
            composed = _composed(email)
            if composed == email:
                continue
            if key is not None:
                same_key = " AND ".join(f"{column} = :{column}" for column in key)
                taken = bind.execute(
                    sa.text(
                        f"SELECT 1 FROM {table} WHERE email = :email"
                        + (f" AND {same_key}" if same_key else "")
                    ),
                    {"email": composed, **dict(zip(key, key_values, strict=True))},
                ).first()
                if taken is not None:
                    continue  # the person has a record under the composed address already
            update = sa.text(f"UPDATE {table} SET email = :email WHERE id = :id")
            bind.execute(update, {"email": composed, "id": record_id})


def downgrade() -> None:
    pass  # the addresses' old form is not kept
