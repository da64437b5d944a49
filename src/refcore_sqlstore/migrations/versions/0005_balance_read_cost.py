"""A balance's cost follows the calendar, not the volume: minute buckets and a covering index (issue 9).

At a million ledger entries the benchmark's growing affiliate (a tenth of them) read its balance
in 0.40 ms against 0.08 ms for an affiliate with a thousand entries in the same database
(``python -m bench``; the pieces timed one by one on the benchmark's database). Two parts of the
read grew with the affiliate's history:

- ``paid``: the sum of the affiliate's succeeded payout executions, 0.31 of the 0.40 ms. The
  ``(program_affiliate_id, status, id)`` index found the rows, but each amount was read from the
  table, one row lookup per payout (510 of them there). The index now ends in ``amount`` too, so
  the sum reads the index alone (0.05 ms for the same 510); listing an affiliate's payouts by
  status still uses it as before. It still visits one index entry per payout, so it grows with
  the number of payouts (about 0.06 microseconds each), never with the number of entries.
- the entries of the current hour, each checked for its payment's dispute and for a payout
  holding it: a dozen for that affiliate by the end of any hour, and for a busy affiliate in a busy
  hour any number. Migration 0004 keeps month, day and hour sums; this revision adds a fourth
  grain, ``minute`` (``YYYY-MM-DD HH:MM``), so a balance reads the hours of today before this one,
  the minutes of this hour before this one, and the entries of this minute only (see
  :mod:`refcore_sqlstore.ledger`). Each entry then touches four bucket rows when it is written,
  moved or held, instead of three.

The triggers (SQLite) and trigger functions (PostgreSQL) are replaced with ones that keep the
four grains, the grain check admits ``minute``, and the existing ledger's minute rows are summed
in. On SQLite a check constraint cannot be altered, so the table is rebuilt, with its triggers
dropped first and made again after (they name the table they write to).

Revision ID: 0005_balance_read_cost
Revises: 0004_balance_buckets
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005_balance_read_cost"
down_revision: str | None = "0004_balance_buckets"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Everything below is written out here rather than imported, so that this revision never changes
# with the code. ``{grains}``/``{bucket}`` mark where the grain list and its bucket text go.

_TABLE = "affiliate_balance_buckets"
_CHECK = "ck_affiliate_balance_buckets_grain"

_PAYOUTS = "payout_executions"
_PAYOUTS_BY_STATUS = ("program_affiliate_id", "status", "id")
_PAYOUT_SUMS = (*_PAYOUTS_BY_STATUS, "amount")


def _index_name(columns: Sequence[str]) -> str:
    return f"ix_{_PAYOUTS}_{'_'.join(columns)}"


def _swap_payout_index(old: Sequence[str], new: Sequence[str]) -> None:
    """The new index is made before the old one goes, so payouts are never without one."""
    op.create_index(_index_name(new), _PAYOUTS, list(new))
    op.drop_index(_index_name(old), table_name=_PAYOUTS)


_UPSERT = """
    ON CONFLICT (program_affiliate_id, mode, grain, bucket) DO UPDATE SET
        open_amount = {table}.open_amount + excluded.open_amount,
        held_amount = {table}.held_amount + excluded.held_amount
"""

# -- SQLite: times are fixed-width UTC text, so a bucket is a prefix of ``available_at``

#: Grain and prefix width: a month is the first 7 characters, a day 10, an hour 13, a minute 16.
_SQLITE_WIDTHS = {"month": 7, "day": 10, "hour": 13, "minute": 16}
_SQLITE_BUCKET = "substr(e.available_at, 1, g.width)"


def _sqlite_grains(grains: Sequence[str]) -> str:
    rows = " UNION ALL ".join(
        f"SELECT '{grain}' AS grain, {_SQLITE_WIDTHS[grain]} AS width" for grain in grains
    )
    return f"({rows})"


def _sqlite_move(grains: str, entry_id: str, sign: str) -> str:
    """Add (``sign`` 1) or remove (-1) one entry, by ID, to or from its bucket of every grain."""
    held = "coalesce(p.open_dispute_count, 0) > 0"
    return f"""
    INSERT INTO {_TABLE} (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
    SELECT e.program_affiliate_id, e.mode, g.grain, {_SQLITE_BUCKET},
           CASE WHEN {held} THEN 0 ELSE {sign} * e.amount END,
           CASE WHEN {held} THEN {sign} * e.amount ELSE 0 END
    FROM commission_entries AS e
    LEFT JOIN payments AS p ON p.id = e.transaction_id
    CROSS JOIN {grains} AS g
    WHERE e.id = {entry_id}
    {_UPSERT.format(table=_TABLE)};
    """


#: ``1`` when the payment's entries become held, ``-1`` when they become open again.
_SQLITE_TO_HELD = "(CASE WHEN NEW.open_dispute_count > 0 THEN 1 ELSE -1 END)"


def _sqlite_triggers(grain_names: Sequence[str]) -> tuple[str, ...]:
    grains = _sqlite_grains(grain_names)
    return (
        f"""
        CREATE TRIGGER commission_entries_balance AFTER INSERT ON commission_entries
        BEGIN {_sqlite_move(grains, "NEW.id", "1")} END
        """,
        f"""
        CREATE TRIGGER payments_balance AFTER UPDATE OF open_dispute_count ON payments
        WHEN (OLD.open_dispute_count > 0) <> (NEW.open_dispute_count > 0)
        BEGIN
        INSERT INTO {_TABLE} (program_affiliate_id, mode, grain, bucket, open_amount, held_amount)
        SELECT e.program_affiliate_id, e.mode, g.grain, {_SQLITE_BUCKET},
               -{_SQLITE_TO_HELD} * sum(e.amount), {_SQLITE_TO_HELD} * sum(e.amount)
        FROM commission_entries AS e
        CROSS JOIN {grains} AS g
        WHERE e.transaction_id = NEW.id
          AND NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
        GROUP BY e.program_affiliate_id, e.mode, g.grain, {_SQLITE_BUCKET}
        {_UPSERT.format(table=_TABLE)};
        END
        """,
        f"""
        CREATE TRIGGER payout_items_balance_insert AFTER INSERT ON payout_items
        WHEN NEW.active_entry_id IS NOT NULL
        BEGIN {_sqlite_move(grains, "NEW.active_entry_id", "-1")} END
        """,
        f"""
        CREATE TRIGGER payout_items_balance_update AFTER UPDATE OF active_entry_id ON payout_items
        WHEN OLD.active_entry_id IS NOT NEW.active_entry_id
        BEGIN
        {_sqlite_move(grains, "OLD.active_entry_id", "1")}
        {_sqlite_move(grains, "NEW.active_entry_id", "-1")}
        END
        """,
        f"""
        CREATE TRIGGER payout_items_balance_delete AFTER DELETE ON payout_items
        WHEN OLD.active_entry_id IS NOT NULL
        BEGIN {_sqlite_move(grains, "OLD.active_entry_id", "1")} END
        """,
    )


_SQLITE_DROP_TRIGGERS = (
    "DROP TRIGGER commission_entries_balance",
    "DROP TRIGGER payments_balance",
    "DROP TRIGGER payout_items_balance_insert",
    "DROP TRIGGER payout_items_balance_update",
    "DROP TRIGGER payout_items_balance_delete",
)


def _sqlite_rebuild(grain_names: Sequence[str]) -> tuple[str, ...]:
    """The table again with a check admitting ``grain_names``, keeping the rows of those grains."""
    allowed = ", ".join(f"'{grain}'" for grain in grain_names)
    return (
        f"""
        CREATE TABLE {_TABLE}_new (
            program_affiliate_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            grain TEXT NOT NULL,
            bucket TEXT NOT NULL,
            open_amount BIGINT NOT NULL,
            held_amount BIGINT NOT NULL,
            CONSTRAINT pk_{_TABLE} PRIMARY KEY (program_affiliate_id, mode, grain, bucket),
            CONSTRAINT {_CHECK} CHECK (grain IN ({allowed}))
        )
        """,
        f"INSERT INTO {_TABLE}_new SELECT * FROM {_TABLE} WHERE grain IN ({allowed})",
        f"DROP TABLE {_TABLE}",
        f"ALTER TABLE {_TABLE}_new RENAME TO {_TABLE}",
    )


# -- PostgreSQL: the same rules as plpgsql functions -------------------------------------------

_PG_FORMATS = {
    "month": "YYYY-MM",
    "day": "YYYY-MM-DD",
    "hour": "YYYY-MM-DD HH24",
    "minute": "YYYY-MM-DD HH24:MI",
}
_PG_BUCKET = "to_char(e.available_at AT TIME ZONE 'UTC', g.format)"


def _pg_grains(grain_names: Sequence[str]) -> str:
    rows = ", ".join(f"('{grain}', '{_PG_FORMATS[grain]}')" for grain in sorted(grain_names))
    return f"(VALUES {rows}) AS g(grain, format)"


def _postgresql_functions(grain_names: Sequence[str]) -> tuple[str, ...]:
    """``CREATE OR REPLACE`` of the two functions that name the grains; the triggers stay."""
    grains = _pg_grains(grain_names)
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
                   CASE WHEN payment_held THEN 0 ELSE direction * e.amount END,
                   CASE WHEN payment_held THEN direction * e.amount ELSE 0 END
            FROM commission_entries AS e CROSS JOIN {grains}
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
            FROM commission_entries AS e CROSS JOIN {grains}
            WHERE e.transaction_id = NEW.id
              AND NOT EXISTS (SELECT 1 FROM payout_items AS i WHERE i.active_entry_id = e.id)
            GROUP BY e.program_affiliate_id, e.mode, g.grain, {_PG_BUCKET}
            ORDER BY 3, 4
            {_UPSERT.format(table="b")};
            RETURN NULL;
        END
        $$
        """,
    )


def _postgresql_check(grain_names: Sequence[str]) -> tuple[str, ...]:
    allowed = ", ".join(f"'{grain}'" for grain in grain_names)
    return (
        f"ALTER TABLE {_TABLE} DROP CONSTRAINT {_CHECK}",
        f"ALTER TABLE {_TABLE} ADD CONSTRAINT {_CHECK} CHECK (grain IN ({allowed}))",
    )


def _backfill_minutes(grains: str, bucket: str) -> str:
    """Sum the existing ledger into minute rows: every entry no payout holds, by its payment."""
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


_BEFORE = ("month", "day", "hour")
_AFTER = ("month", "day", "hour", "minute")


def upgrade() -> None:
    _swap_payout_index(_PAYOUTS_BY_STATUS, _PAYOUT_SUMS)
    if op.get_bind().dialect.name == "postgresql":
        statements = (
            *_postgresql_check(_AFTER),
            _backfill_minutes(_pg_grains(["minute"]), _PG_BUCKET),
            *_postgresql_functions(_AFTER),
        )
    else:
        statements = (
            *_SQLITE_DROP_TRIGGERS,
            *_sqlite_rebuild(_AFTER),
            _backfill_minutes(f"{_sqlite_grains(['minute'])} AS g", _SQLITE_BUCKET),
            *_sqlite_triggers(_AFTER),
        )
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        statements = (
            *_postgresql_functions(_BEFORE),
            f"DELETE FROM {_TABLE} WHERE grain = 'minute'",
            *_postgresql_check(_BEFORE),
        )
    else:
        statements = (*_SQLITE_DROP_TRIGGERS, *_sqlite_rebuild(_BEFORE), *_sqlite_triggers(_BEFORE))
    for statement in statements:
        op.execute(statement)
    _swap_payout_index(_PAYOUT_SUMS, _PAYOUTS_BY_STATUS)
