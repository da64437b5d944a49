"""Migration 0013's downgrade leaves canceled payouts in states earlier code can read.

Earlier code knows neither ``canceled`` status: its enums would fail on the rows. The downgrade
turns a canceled execution into ``failed`` (its entries were released either way) and a canceled
batch into ``dispatched`` at its time of cancellation, and the balance is unchanged by it.
"""

from __future__ import annotations

from alembic import command
from sqlalchemy import select

from refcore.clocks import ManualClock
from refcore.rules.entry_status import Balance
from refcore.services import payouts
from refcore_sqlstore import SqlStore
from refcore_sqlstore.migrate import alembic_config
from refcore_sqlstore.tables import payout_batches, payout_executions
from tests.payouts.world import build_payout_world
from tests.sqlstore.raw import engine_of


def test_migration_0013_downgrade_leaves_canceled_payouts_failed_and_their_batch_dispatched(
    sql_store: SqlStore, clock: ManualClock
) -> None:
    runtime = sql_store.runtime(clock=clock)
    pw = build_payout_world(runtime, clock, hold_days=0)
    pw.earn(10_000)
    pw.past_hold()
    canceled = payouts.cancel_batch(runtime, pw.world.session, pw.prepare().id).batch

    with engine_of(sql_store).begin() as connection:
        command.downgrade(alembic_config(connection), "0012_customer_email_letters")
        batch = connection.execute(select(payout_batches.c.status, payout_batches.c.dispatched_at)).one()
        statuses = connection.execute(select(payout_executions.c.status)).scalars().all()
        command.upgrade(alembic_config(connection), "head")
    assert (batch.status, batch.dispatched_at) == ("dispatched", canceled.canceled_at)
    assert statuses == ["failed"]
    assert pw.balance() == Balance(available=2000)
