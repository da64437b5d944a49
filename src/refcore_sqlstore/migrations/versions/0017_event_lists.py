"""A page of ``GET /v1/events`` is one index range: ``(app_id, livemode, id)``, and with a ``type``
filter ``(app_id, livemode, type, id)``.

Events were read only by the outbox (its partial index of undelivered ones) and by ID. A list
of one mode through the App's ``(app_id, id)`` index would step over every event of the other
mode, and a ``type`` filter over every event of other types, so the cost of a page would grow
with the App's history instead of with the page.

``(app_id, id)`` itself goes: no statement read it, and ``(app_id, livemode, id)`` serves what
an index led by ``app_id`` served. Every event a write emits updates each index of ``events``;
a payment emits two, and each index cost it about 1.5 % more instructions
(``bench/history.md``, fortieth session), so the table keeps one index more than before, not two.

Revision ID: 0017_event_lists
Revises: 0016_links_of_an_affiliate
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0017_event_lists"
down_revision: str | None = "0016_links_of_an_affiliate"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "events"
_INDEXES = (("app_id", "livemode", "id"), ("app_id", "livemode", "type", "id"))


def _name(columns: tuple[str, ...]) -> str:
    return f"ix_{_TABLE}_{'_'.join(columns)}"


_REPLACED = ("app_id", "id")


def upgrade() -> None:
    for columns in _INDEXES:
        op.create_index(op.f(_name(columns)), _TABLE, list(columns), unique=False)
    op.drop_index(op.f(_name(_REPLACED)), table_name=_TABLE)


def downgrade() -> None:
    op.create_index(op.f(_name(_REPLACED)), _TABLE, list(_REPLACED), unique=False)
    for columns in reversed(_INDEXES):
        op.drop_index(op.f(_name(columns)), table_name=_TABLE)
