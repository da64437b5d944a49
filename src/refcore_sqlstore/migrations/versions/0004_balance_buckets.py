"""Balance buckets: a per-affiliate projection of the ledger, kept by triggers (issue 9).

An affiliate's balance used to read every entry of the affiliate that no payout holds, so its
cost grew with the affiliate's own history. ``affiliate_balance_buckets`` keeps, per affiliate,
mode and UTC month, day and hour of ``available_at``, the sum of those entries, split into the
entries of payments with an open dispute (``held_amount``) and the rest (``open_amount``). A
balance then reads one row per month of history, at most 31 day rows, 24 hour rows, and the
entries of the current hour (see :mod:`refcore_sqlstore.ledger`).

The rows are written by triggers only, in the same transaction as the change they follow, so
every writer (any server process, a bulk import, a hand-written fix) keeps them exact:

- an entry is added: its amount goes into its month, day and hour, as held or open by its payment;
- a payment's ``open_dispute_count`` goes from zero to more or back: its entries that no payout
  holds move between open and held;
- a payout item starts or stops holding an entry (``active_entry_id`` set, cleared, or the
  item deleted): the entry leaves or rejoins its buckets.

On PostgreSQL, reading the payment's dispute state takes a ``FOR SHARE`` lock, so an entry
added, or put into a payout, while another transaction opens or closes a dispute on the same
payment lands in the bucket the finished dispute change says (one waits for the other).

The existing ledger is summed into the new table by this migration.

Revision ID: 0004_balance_buckets
Revises: 0003_processor
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# Written out here rather than imported, so that this revision never changes with the code.
ID = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")

revision: str = "0004_balance_buckets"
down_revision: str | None = "0003_processor"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "affiliate_balance_buckets"
_ENTRY_INDEX = "ix_commission_entries_program_affiliate_id_mode_available_at"

_UPSERT = """
    ON CONFLICT (program_affiliate_id, mode, grain, bucket) DO UPDATE SET
        open_amount = {table}.open_amount + excluded.open_amount,
        held_amount = {table}.held_amount + excluded.held_amount
"""

# -- SQLite: times are fixed-width UTC text: a month is its first 7 characters, a day 10, an hour 13

_SQLITE_GRAINS = (
    "(SELECT 'day' AS grain, 10 AS width UNION ALL SELECT 'hour', 13 UNION ALL SELECT 'month', 7)"
)
_SQLITE_BUCKET = "substr(e.available_at, 1, g.width)"


def _sqlite_move(entry_id: str, sign: str) -> str:
    """Add (``sign`` 1) or remove (-1) one entry, by ID, to or from its month, day and hour."""
    held = "coalesce(p.open_dispute_count, 0) > 0"
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

_SQLITE_TRIGGERS = (
    f"""
    CREATE TRIGGER commission_entries_balance AFTER INSERT ON commission_entries
    BEGIN {_sqlite_move("NEW.id", "1")} END
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
    WHERE e.transaction_id = NEW.id
      AND NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
    GROUP BY e.program_affiliate_id, e.mode, g.grain, {_SQLITE_BUCKET}
    {_UPSERT.format(table=_TABLE)};
    END
    """,
    f"""
    CREATE TRIGGER payout_items_balance_insert AFTER INSERT ON payout_items
    WHEN NEW.active_entry_id IS NOT NULL
    BEGIN {_sqlite_move("NEW.active_entry_id", "-1")} END
    """,
    f"""
    CREATE TRIGGER payout_items_balance_update AFTER UPDATE OF active_entry_id ON payout_items
    WHEN OLD.active_entry_id IS NOT NEW.active_entry_id
    BEGIN
    {_sqlite_move("OLD.active_entry_id", "1")}
    {_sqlite_move("NEW.active_entry_id", "-1")}
    END
    """,
    f"""
    CREATE TRIGGER payout_items_balance_delete AFTER DELETE ON payout_items
    WHEN OLD.active_entry_id IS NOT NULL
    BEGIN {_sqlite_move("OLD.active_entry_id", "1")} END
    """,
)

_SQLITE_DROP = (
    "DROP TRIGGER commission_entries_balance",
    "DROP TRIGGER payments_balance",
    "DROP TRIGGER payout_items_balance_insert",
    "DROP TRIGGER payout_items_balance_update",
    "DROP TRIGGER payout_items_balance_delete",
)


def _backfill(grains: str, bucket: str) -> str:
    """Sum the existing ledger into the buckets: every entry no payout holds, by its payment."""
    return f"""
    INSERT INTO {_TABLE} (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
    SELECT e.program_affiliate_id, e.mode, g.grain, {bucket},
           sum(CASE WHEN coalesce(p.open_dispute_count, 0) > 0 THEN 0 ELSE e.amount END),
           sum(CASE WHEN coalesce(p.open_dispute_count, 0) > 0 THEN e.amount ELSE 0 END)
    FROM commission_entries AS e
    LEFT JOIN payments AS p ON p.id = e.transaction_id
    CROSS JOIN {grains}
    WHERE NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
    GROUP BY e.program_affiliate_id, e.mode, g.grain, {bucket}
    """


_SQLITE_BACKFILL = _backfill(f"{_SQLITE_GRAINS} AS g", _SQLITE_BUCKET)

# -- PostgreSQL: the same rules as plpgsql functions -------------------------------------------

_PG_GRAINS = (
    "(VALUES ('day', 'YYYY-MM-DD'), ('hour', 'YYYY-MM-DD HH24'), ('month', 'YYYY-MM')) AS g(grain, format)"
)
_PG_BUCKET = "to_char(e.available_at AT TIME ZONE 'UTC', g.format)"

_POSTGRESQL_TRIGGERS = (
    f"""
    CREATE FUNCTION refcore_balance_move(moved_entry text, direction integer) RETURNS void
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
               CASE WHEN payment_held THEN 0 ELSE direction * e.amount END,
               CASE WHEN payment_held THEN direction * e.amount ELSE 0 END
        FROM commission_entries AS e CROSS JOIN {_PG_GRAINS}
        WHERE e.id = moved_entry
        ORDER BY g.grain
        {_UPSERT.format(table="b")};
    END
    $$
    """,
    """
    CREATE FUNCTION refcore_balance_on_entry() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM refcore_balance_move(NEW.id, 1);
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER commission_entries_balance AFTER INSERT ON commission_entries
    FOR EACH ROW EXECUTE FUNCTION refcore_balance_on_entry()
    """,
    f"""
    CREATE FUNCTION refcore_balance_on_dispute_change() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        to_held integer := CASE WHEN NEW.open_dispute_count > 0 THEN 1 ELSE -1 END;
    BEGIN
        INSERT INTO {_TABLE} AS b (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
        SELECT e.program_affiliate_id, e.mode, g.grain, {_PG_BUCKET},
               -to_held * sum(e.amount), to_held * sum(e.amount)
        FROM commission_entries AS e CROSS JOIN {_PG_GRAINS}
        WHERE e.transaction_id = NEW.id
          AND NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
        GROUP BY e.program_affiliate_id, e.mode, g.grain, {_PG_BUCKET}
        ORDER BY 3, 4
        {_UPSERT.format(table="b")};
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER payments_balance AFTER UPDATE OF open_dispute_count ON payments
    FOR EACH ROW
    WHEN ((OLD.open_dispute_count > 0) IS DISTINCT FROM (NEW.open_dispute_count > 0))
    EXECUTE FUNCTION refcore_balance_on_dispute_change()
    """,
    """
    CREATE FUNCTION refcore_balance_on_payout_item() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            IF OLD.active_entry_id IS NOT NULL THEN
                PERFORM refcore_balance_move(OLD.active_entry_id, 1);
            END IF;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            IF NEW.active_entry_id IS NOT NULL THEN
                PERFORM refcore_balance_move(NEW.active_entry_id, -1);
            END IF;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER payout_items_balance_insert AFTER INSERT ON payout_items
    FOR EACH ROW WHEN (NEW.active_entry_id IS NOT NULL)
    EXECUTE FUNCTION refcore_balance_on_payout_item()
    """,
    """
    CREATE TRIGGER payout_items_balance_update AFTER UPDATE OF active_entry_id ON payout_items
    FOR EACH ROW WHEN (OLD.active_entry_id IS DISTINCT FROM NEW.active_entry_id)
    EXECUTE FUNCTION refcore_balance_on_payout_item()
    """,
    """
    CREATE TRIGGER payout_items_balance_delete AFTER DELETE ON payout_items
    FOR EACH ROW WHEN (OLD.active_entry_id IS NOT NULL)
    EXECUTE FUNCTION refcore_balance_on_payout_item()
    """,
)

_POSTGRESQL_DROP = (
    "DROP TRIGGER payout_items_balance_delete ON payout_items",
    "DROP TRIGGER payout_items_balance_update ON payout_items",
    "DROP TRIGGER payout_items_balance_insert ON payout_items",
    "DROP FUNCTION refcore_balance_on_payout_item()",
    "DROP TRIGGER payments_balance ON payments",
    "DROP FUNCTION refcore_balance_on_dispute_change()",
    "DROP TRIGGER commission_entries_balance ON commission_entries",
    "DROP FUNCTION refcore_balance_on_entry()",
    "DROP FUNCTION refcore_balance_move(text, integer)",
)

_POSTGRESQL_BACKFILL = _backfill(_PG_GRAINS, _PG_BUCKET)


def upgrade() -> None:
    op.create_table(
        _TABLE,
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("grain", sa.Text(), nullable=False),
        sa.Column("bucket", sa.Text(), nullable=False),
        sa.Column("open_amount", sa.BigInteger(), nullable=False),
        sa.Column("held_amount", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "grain IN ('month', 'day', 'hour')", name=op.f("ck_affiliate_balance_buckets_grain")
        ),
        sa.PrimaryKeyConstraint(
            "program_affiliate_id", "mode", "grain", "bucket", name=op.f("pk_affiliate_balance_buckets")
        ),
    )
    op.create_index(
        op.f(_ENTRY_INDEX),
        "commission_entries",
        ["program_affiliate_id", "mode", "available_at"],
        unique=False,
    )
    postgresql_database = op.get_bind().dialect.name == "postgresql"
    op.execute(_POSTGRESQL_BACKFILL if postgresql_database else _SQLITE_BACKFILL)
    for statement in _POSTGRESQL_TRIGGERS if postgresql_database else _SQLITE_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    postgresql_database = op.get_bind().dialect.name == "postgresql"
    for statement in _POSTGRESQL_DROP if postgresql_database else _SQLITE_DROP:
        op.execute(statement)
    op.drop_index(op.f(_ENTRY_INDEX), table_name="commission_entries")
    op.drop_table(_TABLE)
