"""Stored e-mail addresses name an internationalised domain in Unicode, not in IDNA's ASCII form.

Since this release ``refcore.validation.address_key`` writes a domain sent in IDNA's ASCII form
(``me@xn--bcher-kva.example``) as the Unicode one it stands for (``me@bücher.example``), the form
an address typed by a person has. The two spellings of one mailbox had been two affiliates of one
program, two customers, and a customer under one was not taken for the affiliate under the other
(probe AI). Every lookup now converts the address it is given, so an address stored in the ASCII
form would be found by no spelling.

This migration writes each such address (users, program affiliates, pending signups, customers)
in the new form. Where the new form is already taken under a unique key (a user of that address,
an affiliate of that program), the row is left as it is, as 0019 does: two records of one person
cannot be merged here. A domain IDNA 2008 cannot decode is left as it is. The conversion is
written out here, so that this revision never changes with the code; the downgrade changes
nothing back.

Revision ID: 0021_unicode_address_domains
Revises: 0020_shared_processor_accounts
Create Date: 2026-11-28
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import idna
import sqlalchemy as sa
from alembic import op

revision: str = "0021_unicode_address_domains"
down_revision: str | None = "0020_shared_processor_accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Each table with addresses, and the other columns of its unique key on ``email`` (``None``:
#: no unique key).
_TABLES: dict[str, tuple[str, ...] | None] = {
    "users": (),
    "program_affiliates": ("program_id",),
    "pending_signups": None,
    "customers": None,
}


def _converted(address: str) -> str:
    local, at, domain = address.rpartition("@")
    if not at or "xn--" not in domain:
        return address
    try:
        converted = f"{local}@{idna.decode(domain)}"
    except idna.IDNAError:
        return address
    return unicodedata.normalize("NFC", converted)


def upgrade() -> None:
    bind = op.get_bind()
    for table, key in _TABLES.items():
        columns = ", ".join(("id", "email", *(key or ())))
        rows = bind.execute(sa.text(f"SELECT {columns} FROM {table} WHERE email LIKE '%xn--%'")).all()
        for row in rows:
            record_id, email, *key_values = row
            converted = _converted(email)
            if converted == email:
                continue
            if key is not None:
                same_key = " AND ".join(f"{column} = :{column}" for column in key)
                taken = bind.execute(
                    sa.text(
                        f"SELECT 1 FROM {table} WHERE email = :email"
                        + (f" AND {same_key}" if same_key else "")
                    ),
                    {"email": converted, **dict(zip(key, key_values, strict=True))},
                ).first()
                if taken is not None:
                    continue  # the person has a record under the Unicode form already
            update = sa.text(f"UPDATE {table} SET email = :email WHERE id = :id")
            bind.execute(update, {"email": converted, "id": record_id})


def downgrade() -> None:
    pass  # the addresses' old form is not kept
