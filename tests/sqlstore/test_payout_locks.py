"""``LedgerReads.lock_for_payout`` makes the balance rows a payout will move, in the triggers' own
spelling of their buckets: on rows that exist it changes nothing, and it makes no row the
triggers would not (on SQLite it does nothing at all). Its grains and bucket formats are written
apart from the triggers' (migration 0005), so this holds them together."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from refcore.clocks import ManualClock
from refcore.models import Mode
from refcore_sqlstore import SqlStore
from refcore_sqlstore.tables import affiliate_balance_buckets
from tests.payouts.world import build_payout_world


def _buckets(store: SqlStore) -> list[tuple[object, ...]]:
    with store._engine.connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(
                select(affiliate_balance_buckets).order_by(*affiliate_balance_buckets.primary_key)
            )
        ]


def test_the_payout_locks_leave_the_balance_rows_as_the_triggers_made_them(
    sql_store: SqlStore, clock: ManualClock
) -> None:
    rt = sql_store.runtime(clock=clock)
    pw = build_payout_world(rt, clock, hold_days=0)
    for step in (
        timedelta(0),
        timedelta(minutes=1),
        timedelta(hours=1),
        timedelta(days=1),
        timedelta(days=31),
    ):
        clock.advance(step)
        pw.earn(10_000)
    entries = pw.world.entries()
    assert len({(e.available_at.month, e.available_at.day, e.available_at.hour) for e in entries}) == 4
    before = _buckets(sql_store)
    assert before

    rt.transaction(lambda tx: tx.uow.ledger().lock_for_payout([entry.id for entry in entries]))

    assert _buckets(sql_store) == before
    assert rt.read(lambda tx: tx.uow.ledger().unsettled_entries(pw.world.affiliate.id, Mode.LIVE)) == sorted(
        entries, key=lambda entry: entry.id
    )
