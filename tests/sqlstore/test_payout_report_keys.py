"""Migration 0010: the report keys already spent are registered, the earliest report of each winning.

Before 0010 a payout report's ``Idempotency-Key`` was kept only on the execution it settled, and an
App could spend one key on several executions. The backfill registers each App's keys once, for
the earliest report (``completed_at``, then the execution's ID); keys of other Apps are their own;
executions settled by hand (no key) are left out. (Its downgrade is in ``test_migrations.py``'s
walk down to the base.) The whole test runs in one transaction that is
rolled back, so the foreign keys, checked at commit, never see the made-up parents.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from alembic import command
from sqlalchemy import insert, select

from refcore.models.payout import PayoutExecutionStatus
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.migrate import alembic_config
from refcore_sqlstore.tables import payout_executions, payout_report_keys

AT = datetime(2026, 1, 1, tzinfo=UTC)


def settled(execution_id: str, app_id: str, key: str | None, minutes: int) -> dict[str, Any]:
    return {
        "id": execution_id,
        "app_id": app_id,
        "program_id": "prog_x",
        "program_affiliate_id": f"pa_{execution_id}",
        "amount": 100,
        "currency": "usd",
        "status": PayoutExecutionStatus.SUCCEEDED.value,
        "created_at": AT,
        "batch_id": None,
        "completed_at": AT + timedelta(minutes=minutes),
        "idempotency_key": key,
        "completed_manually": key is None,
        "outcome_reason": None,
        "live_program_affiliate_id": None,
    }


def test_migration_0010_registers_each_apps_earliest_report_of_a_key(
    empty_database_url: str,
) -> None:
    engine = create_store_engine(normalise_url(empty_database_url))
    try:
        with engine.connect() as connection:
            transaction = connection.begin()
            command.upgrade(alembic_config(connection), "0009_payout_sums")
            connection.execute(
                insert(payout_executions),
                [
                    settled("pex_b", "app_one", "run-1", minutes=5),
                    settled("pex_a", "app_one", "run-1", minutes=9),  # later: not registered
                    settled("pex_d", "app_one", "run-2", minutes=1),
                    settled("pex_c", "app_one", "run-2", minutes=1),  # same time: the lower ID wins
                    settled("pex_e", "app_two", "run-1", minutes=7),  # another App's own key
                    settled("pex_f", "app_one", None, minutes=3),  # mark-paid: no key
                ],
            )

            command.upgrade(alembic_config(connection), "0010_payout_report_keys")
            k = payout_report_keys
            rows = connection.execute(select(k.c.app_id, k.c.idempotency_key, k.c.id, k.c.created_at)).all()
            assert sorted(rows) == [
                ("app_one", "run-1", "pex_b", AT + timedelta(minutes=5)),
                ("app_one", "run-2", "pex_c", AT + timedelta(minutes=1)),
                ("app_two", "run-1", "pex_e", AT + timedelta(minutes=7)),
            ]
            transaction.rollback()
    finally:
        engine.dispose()
