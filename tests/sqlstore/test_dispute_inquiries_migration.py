"""Migration 0015's downgrade leaves open inquiries in a state earlier code can hold.

Earlier code counts every open dispute in ``payments.disputed_amount``; an inquiry open while
refunds took the payment would then break ``refunded_amount + disputed_amount <= amount``. The
downgrade closes an open inquiry as ``withdrawn`` and releases its hold; a chargeback and a
closed inquiry are left as they are.
"""

from __future__ import annotations

from alembic import command
from sqlalchemy import select

from refcore.clocks import ManualClock
from refcore.models import Mode
from refcore_sqlstore import SqlStore
from refcore_sqlstore.migrate import alembic_config
from refcore_sqlstore.tables import disputes, payments
from tests.contract.scenario import build_world
from tests.sqlstore.raw import engine_of


def test_migration_0015_downgrade_closes_open_inquiries_and_releases_their_hold(
    sql_store: SqlStore, clock: ManualClock
) -> None:
    world = build_world(sql_store.runtime(clock=clock), clock, hold_days=0)
    inquired = world.pay(world.referred_customer(), 10_000).record.payment_id
    charged = world.pay(world.referred_customer(), 10_000).record.payment_id
    world.dispute("du_open", inquired, "opened", 10_000, inquiry=True)
    world.refund(inquired, 3_000)
    world.dispute("du_closed", inquired, "opened", 1_000, inquiry=True)
    world.dispute("du_closed", inquired, "withdrawn", 1_000, inquiry=True)
    world.dispute("dp_chargeback", charged, "opened", 4_000)

    with engine_of(sql_store).begin() as connection:
        command.downgrade(alembic_config(connection), "0014_delivery_modes")
        statuses = dict(connection.execute(select(disputes.c.dispute_id, disputes.c.status)).all())
        totals = {
            row.payment_id: (row.refunded_amount, row.disputed_amount, row.open_dispute_count)
            for row in connection.execute(
                select(
                    payments.c.payment_id,
                    payments.c.refunded_amount,
                    payments.c.disputed_amount,
                    payments.c.open_dispute_count,
                )
            )
        }
        command.upgrade(alembic_config(connection), "head")
    assert statuses == {"du_open": "withdrawn", "du_closed": "withdrawn", "dp_chargeback": "opened"}
    assert totals == {inquired: (3_000, 0, 0), charged: (0, 4_000, 1)}


def test_migration_0015_keeps_every_earlier_dispute_a_chargeback(
    sql_store: SqlStore, clock: ManualClock
) -> None:
    """Which earlier disputes were inquiries was never kept: all of them stay counted."""
    world = build_world(sql_store.runtime(clock=clock), clock, hold_days=0)
    paid = world.pay(world.referred_customer(), 10_000).record.payment_id
    with engine_of(sql_store).begin() as connection:
        command.downgrade(alembic_config(connection), "0014_delivery_modes")
    with engine_of(sql_store).begin() as connection:
        connection.execute(
            disputes.insert().values(  # what the earlier release wrote: no inquiry column
                id="dsp_earlier",
                app_id=world.app.id,
                mode=Mode.LIVE.value,
                dispute_id="du_earlier",
                payment_id=paid,
                transaction_id=select(payments.c.id).where(payments.c.payment_id == paid).scalar_subquery(),
                status="opened",
                amount=4_000,
                created_at=clock.now(),
                updated_at=clock.now(),
            )
        )
    with engine_of(sql_store).begin() as connection:  # the insert's deferred checks done first
        command.upgrade(alembic_config(connection), "head")
    (dispute,) = world.rt.read(lambda tx: tx.uow.disputes.find_all({}))
    assert dispute.inquiry is False
