"""A page of ``GET /v1/events`` is one index range: ``(app_id, livemode, id)``, and with a ``type``
filter ``(app_id, livemode, type, id)``.

Events were read only by the outbox (its partial index of undelivered ones) and by ID. A list
of one mode through the App's ``(app_id, id)`` index would step over every event of the other
mode, and a ``type`` filter over every event of other types, so the cost of a page would grow
with the App's history instead of with the page.

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


def upgrade() -> None:
    for columns in _INDEXES:
        op.create_index(op.f(_name(columns)), _TABLE, list(columns), unique=False)


def downgrade() -> None:
    for columns in reversed(_INDEXES):
        op.drop_index(op.f(_name(columns)), table_name=_TABLE)
