"""An affiliate's paid and in-flight payout sums, kept by triggers: a balance reads one row (issue 9).

A balance's ``paid`` is the sum of the affiliate's succeeded payout executions and its
``processing`` the sum of its prepared and ready ones (:mod:`refcore_sqlstore.ledger`). Migration
0005 made that sum read a covering index, but it still visited one index entry per payout ever
made: at the benchmark's million entries (460 payouts an affiliate) the ``paid`` sum alone took
46 of a balance's 170 microseconds, against 5 at ten thousand entries (SQLite, timed one part at
a time; ``bench/history.md``, thirty-seventh session), and the ready payouts page reads the
balance of every affiliate on it.

``affiliate_payout_sums`` keeps one row per affiliate with both sums, written by triggers only,
in the same transaction as the change they follow, as the balance buckets are (migration 0004):

- an execution is inserted: its amount goes into ``paid_amount`` (``succeeded``) or
  ``processing_amount`` (``prepared``, ``ready``); a ``failed`` one adds nothing;
- its ``status``, ``amount`` or affiliate changes so that what it adds changes (``prepared`` to
  ``ready`` does not): its old part comes out and its new part goes in;
- it is deleted: its part comes out.

A row is locked only by a change to one of its affiliate's payouts, and every such change
already holds the affiliate's payout lock or its execution's (docs/payouts.md), so it adds no
new wait between payouts and the ledger's writers.

The triggers are made before the backfill: on PostgreSQL ``CREATE TRIGGER`` locks
``payout_executions`` against writes until this migration commits, so no payout that an older
server records meanwhile can fall between the backfill's snapshot and the triggers.

Revision ID: 0009_payout_sums
Revises: 0008_customer_emails
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# Written out here rather than imported, so that this revision never changes with the code.
ID = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")

revision: str = "0009_payout_sums"
down_revision: str | None = "0008_customer_emails"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "affiliate_payout_sums"


def _paid(row: str) -> str:
    return f"CASE WHEN {row}.status = 'succeeded' THEN {row}.amount ELSE 0 END"


def _processing(row: str) -> str:
    return f"CASE WHEN {row}.status IN ('prepared', 'ready') THEN {row}.amount ELSE 0 END"


def _counted(row: str) -> str:
    return f"{row}.status IN ('succeeded', 'prepared', 'ready')"


_UPSERT = f"""
    ON CONFLICT (program_affiliate_id) DO UPDATE SET
        paid_amount = {_TABLE}.paid_amount + excluded.paid_amount,
        processing_amount = {_TABLE}.processing_amount + excluded.processing_amount
"""


def _add(row: str, sign: str) -> str:
    """The upsert that adds ``row``'s part, times ``sign``, to its affiliate's sums."""
    return f"""
    INSERT INTO {_TABLE} (program_affiliate_id, paid_amount, processing_amount)
    VALUES ({row}.program_affiliate_id, {sign} * ({_paid(row)}), {sign} * ({_processing(row)}))
    {_UPSERT};
    """


#: An update changes the sums only when the execution's part does: ``prepared`` to ``ready``
#: (a batch's dispatch) writes nothing and locks no sums row.
_PART_CHANGED = (
    "OLD.program_affiliate_id IS DISTINCT FROM NEW.program_affiliate_id"
    " OR OLD.amount IS DISTINCT FROM NEW.amount"
    f" OR ({_paid('OLD')}) <> ({_paid('NEW')})"
    f" OR ({_processing('OLD')}) <> ({_processing('NEW')})"
)

_SQLITE_TRIGGERS = (
    f"""
    CREATE TRIGGER payout_executions_sums_insert AFTER INSERT ON payout_executions
    WHEN {_counted("NEW")}
    BEGIN {_add("NEW", "1")} END
    """,
    f"""
    CREATE TRIGGER payout_executions_sums_update
    AFTER UPDATE OF status, amount, program_affiliate_id ON payout_executions
    WHEN {_PART_CHANGED.replace("IS DISTINCT FROM", "IS NOT")}
    BEGIN {_add("OLD", "-1")} {_add("NEW", "1")} END
    """,
    f"""
    CREATE TRIGGER payout_executions_sums_delete AFTER DELETE ON payout_executions
    WHEN {_counted("OLD")}
    BEGIN {_add("OLD", "-1")} END
    """,
)
_SQLITE_DROP = (
    "DROP TRIGGER payout_executions_sums_delete",
    "DROP TRIGGER payout_executions_sums_update",
    "DROP TRIGGER payout_executions_sums_insert",
)

_POSTGRESQL_TRIGGERS = (
    f"""
    CREATE FUNCTION refcore_payout_sums_on_execution() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            {_add("OLD", "-1")}
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            {_add("NEW", "1")}
        END IF;
        RETURN NULL;
    END
    $$
    """,
    f"""
    CREATE TRIGGER payout_executions_sums_insert AFTER INSERT ON payout_executions
    FOR EACH ROW WHEN ({_counted("NEW")})
    EXECUTE FUNCTION refcore_payout_sums_on_execution()
    """,
    f"""
    CREATE TRIGGER payout_executions_sums_update
    AFTER UPDATE OF status, amount, program_affiliate_id ON payout_executions
    FOR EACH ROW WHEN ({_PART_CHANGED})
    EXECUTE FUNCTION refcore_payout_sums_on_execution()
    """,
    f"""
    CREATE TRIGGER payout_executions_sums_delete AFTER DELETE ON payout_executions
    FOR EACH ROW WHEN ({_counted("OLD")})
    EXECUTE FUNCTION refcore_payout_sums_on_execution()
    """,
)
_POSTGRESQL_DROP = (
    "DROP TRIGGER payout_executions_sums_delete ON payout_executions",
    "DROP TRIGGER payout_executions_sums_update ON payout_executions",
    "DROP TRIGGER payout_executions_sums_insert ON payout_executions",
    "DROP FUNCTION refcore_payout_sums_on_execution()",
)

_BACKFILL = f"""
    INSERT INTO {_TABLE} (program_affiliate_id, paid_amount, processing_amount)
    SELECT x.program_affiliate_id, sum({_paid("x")}), sum({_processing("x")})
    FROM payout_executions AS x
    WHERE {_counted("x")}
    GROUP BY x.program_affiliate_id
"""


def upgrade() -> None:
    op.create_table(
        _TABLE,
        sa.Column("program_affiliate_id", ID, nullable=False),
        sa.Column("paid_amount", sa.BigInteger(), nullable=False),
        sa.Column("processing_amount", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("program_affiliate_id", name=op.f("pk_affiliate_payout_sums")),
    )
    postgresql_database = op.get_bind().dialect.name == "postgresql"
    for statement in _POSTGRESQL_TRIGGERS if postgresql_database else _SQLITE_TRIGGERS:
        op.execute(statement)
    op.execute(_BACKFILL)


def downgrade() -> None:
    postgresql_database = op.get_bind().dialect.name == "postgresql"
    for statement in _POSTGRESQL_DROP if postgresql_database else _SQLITE_DROP:
        op.execute(statement)
    op.drop_table(_TABLE)
