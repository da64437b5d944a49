"""A reversal is never held: an open dispute holds only the commission it may take back.

The balance projection (migrations 0004, 0005) moved every entry of a disputed payment into the
``held`` column, negative ones too. A reversal taken out of ``available`` made the available
balance *rise* when a dispute opened: an affiliate paid 2,000 whose payment was then refunded by
half (a reversal of -1,000 netted against their next 1,000) was shown 1,000 available, and paid
it, as soon as a dispute of that payment opened (probe T). Holding protects the merchant from
paying commission a dispute may take back; a reversal takes money back, so it counts as soon as
it is approved, whatever the payment's disputes (``refcore.rules.entry_status``).

The triggers (SQLite) and the two trigger functions (PostgreSQL) are made again with that rule,
and the reversals of payments held now move from the held column to the open one, in every
grain's bucket. Everything is written out here, as in 0005, so that this revision never changes
with the code.

Revision ID: 0018_reversals_never_held
Revises: 0017_event_lists
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0018_reversals_never_held"
down_revision: str | None = "0017_event_lists"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "affiliate_balance_buckets"
_GRAINS = ("month", "day", "hour", "minute")

_UPSERT = """
    ON CONFLICT (program_affiliate_id, mode, grain, bucket) DO UPDATE SET
        open_amount = {table}.open_amount + excluded.open_amount,
        held_amount = {table}.held_amount + excluded.held_amount
"""

#: Which entries an open dispute of their payment holds: before this revision every one, now the
#: positive ones alone. ``{held}`` is the payment's "has an open dispute" condition.
_HOLDS_ALL = "{held}"
_HOLDS_POSITIVE = "({held} AND e.amount > 0)"

# -- SQLite ----------------------------------------------------------------------------------

_SQLITE_WIDTHS = {"month": 7, "day": 10, "hour": 13, "minute": 16}
_SQLITE_BUCKET = "substr(e.available_at, 1, g.width)"
_SQLITE_GRAINS = (
    "("
    + " UNION ALL ".join(f"SELECT '{grain}' AS grain, {_SQLITE_WIDTHS[grain]} AS width" for grain in _GRAINS)
    + ")"
)


def _sqlite_move(holds: str, entry_id: str, sign: str) -> str:
    """Add (``sign`` 1) or remove (-1) one entry, by ID, to or from its bucket of every grain."""
    held = holds.format(held="coalesce(p.open_dispute_count, 0) > 0")
    return f"""
    INSERT INTO {_TABLE} (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
    SELECT e.program_affiliate_id, e.mode, g.grain, {_SQLITE_BUCKET},
           CASE WHEN {held} THEN 0 ELSE {sign} * e.amount END,
           CASE WHEN {held} THEN {sign} * e.amount ELSE 0 END
    FROM commission_entries AS e
    LEFT JOIN payments AS p ON p.id = e.transaction_id
    CROSS JOIN {_SQLITE_GRAINS} AS g
    WHERE e.id = {entry_id}
    {_UPSERT.format(table=_TABLE)};
    """


#: ``1`` when the payment's entries become held, ``-1`` when they become open again.
_SQLITE_TO_HELD = "(CASE WHEN NEW.open_dispute_count > 0 THEN 1 ELSE -1 END)"


def _sqlite_triggers(holds: str) -> tuple[str, ...]:
    moved = "" if holds == _HOLDS_ALL else "AND e.amount > 0"
    return (
        f"""
        CREATE TRIGGER commission_entries_balance AFTER INSERT ON commission_entries
        BEGIN {_sqlite_move(holds, "NEW.id", "1")} END
        """,
        f"""
        CREATE TRIGGER payments_balance AFTER UPDATE OF open_dispute_count ON payments
        WHEN (OLD.open_dispute_count > 0) <> (NEW.open_dispute_count > 0)
        BEGIN
        INSERT INTO {_TABLE} (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
        SELECT e.program_affiliate_id, e.mode, g.grain, {_SQLITE_BUCKET},
               -{_SQLITE_TO_HELD} * sum(e.amount), {_SQLITE_TO_HELD} * sum(e.amount)
        FROM commission_entries AS e
        CROSS JOIN {_SQLITE_GRAINS} AS g
        WHERE e.transaction_id = NEW.id {moved}
          AND NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
        GROUP BY e.program_affiliate_id, e.mode, g.grain, {_SQLITE_BUCKET}
        {_UPSERT.format(table=_TABLE)};
        END
        """,
        f"""
        CREATE TRIGGER payout_items_balance_insert AFTER INSERT ON payout_items
        WHEN NEW.active_entry_id IS NOT NULL
        BEGIN {_sqlite_move(holds, "NEW.active_entry_id", "-1")} END
        """,
        f"""
        CREATE TRIGGER payout_items_balance_update AFTER UPDATE OF active_entry_id ON payout_items
        WHEN OLD.active_entry_id IS NOT NEW.active_entry_id
        BEGIN
        {_sqlite_move(holds, "OLD.active_entry_id", "1")}
        {_sqlite_move(holds, "NEW.active_entry_id", "-1")}
        END
        """,
        f"""
        CREATE TRIGGER payout_items_balance_delete AFTER DELETE ON payout_items
        WHEN OLD.active_entry_id IS NOT NULL
        BEGIN {_sqlite_move(holds, "OLD.active_entry_id", "1")} END
        """,
    )


_SQLITE_DROP_TRIGGERS = (
    "DROP TRIGGER commission_entries_balance",
    "DROP TRIGGER payments_balance",
    "DROP TRIGGER payout_items_balance_insert",
    "DROP TRIGGER payout_items_balance_update",
    "DROP TRIGGER payout_items_balance_delete",
)

# -- PostgreSQL ------------------------------------------------------------------------------

_PG_FORMATS = {
    "month": "YYYY-MM",
    "day": "YYYY-MM-DD",
    "hour": "YYYY-MM-DD HH24",
    "minute": "YYYY-MM-DD HH24:MI",
}
_PG_BUCKET = "to_char(e.available_at AT TIME ZONE 'UTC', g.format)"
_PG_GRAINS = (
    "(VALUES "
    + ", ".join(f"('{grain}', '{_PG_FORMATS[grain]}')" for grain in sorted(_GRAINS))
    + ") AS g(grain, format)"
)


def _postgresql_functions(holds: str) -> tuple[str, ...]:
    """``CREATE OR REPLACE`` of the two functions the triggers call; the triggers stay."""
    held = holds.format(held="payment_held")
    moved = "" if holds == _HOLDS_ALL else "AND e.amount > 0"
    return (
        f"""
        CREATE OR REPLACE FUNCTION refcore_balance_move(moved_entry text, direction integer) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
            entry_payment text;
            payment_held boolean;
        BEGIN
            SELECT e.transaction_id INTO entry_payment FROM commission_entries AS e WHERE e.id = moved_entry;
            IF NOT FOUND THEN
                RETURN;
            END IF;
            SELECT p.open_dispute_count > 0 INTO payment_held
            FROM payments AS p WHERE p.id = entry_payment FOR SHARE;
            payment_held := coalesce(payment_held, false);
            INSERT INTO {_TABLE} AS b (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
            SELECT e.program_affiliate_id, e.mode, g.grain, {_PG_BUCKET},
                   CASE WHEN {held} THEN 0 ELSE direction * e.amount END,
                   CASE WHEN {held} THEN direction * e.amount ELSE 0 END
            FROM commission_entries AS e CROSS JOIN {_PG_GRAINS}
            WHERE e.id = moved_entry
            ORDER BY g.grain
            {_UPSERT.format(table="b")};
        END
        $$
        """,
        f"""
        CREATE OR REPLACE FUNCTION refcore_balance_on_dispute_change() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            to_held integer := CASE WHEN NEW.open_dispute_count > 0 THEN 1 ELSE -1 END;
        BEGIN
            INSERT INTO {_TABLE} AS b (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
            SELECT e.program_affiliate_id, e.mode, g.grain, {_PG_BUCKET},
                   -to_held * sum(e.amount), to_held * sum(e.amount)
            FROM commission_entries AS e CROSS JOIN {_PG_GRAINS}
            WHERE e.transaction_id = NEW.id {moved}
              AND NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
            GROUP BY e.program_affiliate_id, e.mode, g.grain, {_PG_BUCKET}
            ORDER BY 3, 4
            {_UPSERT.format(table="b")};
            RETURN NULL;
        END
        $$
        """,
    )


# -- the ledger as it stands -----------------------------------------------------------------


def _move_held_reversals(grains: str, bucket: str, to_open: int) -> str:
    """Move the reversals of the payments held now, no payout holding them, from the held column
    to the open one (``to_open`` 1) or back (-1), in their bucket of every grain."""
    return f"""
    INSERT INTO {_TABLE} (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
    SELECT e.program_affiliate_id, e.mode, g.grain, {bucket},
           ({to_open}) * sum(e.amount), ({-to_open}) * sum(e.amount)
    FROM commission_entries AS e
    JOIN payments AS p ON p.id = e.transaction_id
    CROSS JOIN {grains}
    WHERE p.open_dispute_count > 0 AND e.amount < 0
      AND NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
    GROUP BY e.program_affiliate_id, e.mode, g.grain, {bucket}
    {_UPSERT.format(table=_TABLE)}
    """


def _statements(holds: str, to_open: int) -> tuple[str, ...]:
    if op.get_bind().dialect.name == "postgresql":
        return (*_postgresql_functions(holds), _move_held_reversals(_PG_GRAINS, _PG_BUCKET, to_open))
    return (
        *_SQLITE_DROP_TRIGGERS,
        *_sqlite_triggers(holds),
        _move_held_reversals(f"{_SQLITE_GRAINS} AS g", _SQLITE_BUCKET, to_open),
    )


def upgrade() -> None:
    for statement in _statements(_HOLDS_POSITIVE, 1):
        op.execute(statement)


def downgrade() -> None:
    for statement in _statements(_HOLDS_ALL, -1):
        op.execute(statement)
