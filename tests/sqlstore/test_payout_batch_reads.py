"""A payout batch, and the CSV of ready payouts, read the program's affiliates together: their
statements grow with the affiliates a payout is made for, not with the whole program
(``payouts._payable_now``; on PostgreSQL ``ledger._listed_status_sums_statement``). Read one
affiliate after another, a batch of a program of 2,000 affiliates had sent 5,005 statements,
2.3 s on PostgreSQL; the CSV 2,130."""

from __future__ import annotations

from refcore.clocks import ManualClock
from refcore.models import EventType
from refcore.services import payouts
from refcore.services.runtime import Runtime
from refcore_sqlstore import SqlStore
from tests.contract.scenario import World
from tests.payouts.world import PayoutWorld, build_payout_world
from tests.sqlstore.raw import recorded_statements

#: More affiliates than one lookup statement reads (``payouts._LOOKED_UP_TOGETHER``), and far
#: more than the statements a batch of a few ready affiliates needs.
_IDLE_AFFILIATES = 60
_READY_AFFILIATES = 2


def _program_with_a_few_ready_affiliates(store: SqlStore) -> tuple[Runtime, World]:
    clock = ManualClock()
    pw = build_payout_world(store.runtime(clock=clock), clock, hold_days=0, minimum_payout=1_000)
    for _ in range(_IDLE_AFFILIATES):
        pw.world.add_affiliate()
    earning = [pw.world.affiliate] + [pw.world.add_affiliate() for _ in range(_READY_AFFILIATES - 1)]
    for affiliate in earning:
        pw.earn(10_000, affiliate)
    pw.past_hold()
    return pw.rt, pw.world


def test_a_batch_reads_payouts_in_flight_together_and_on_postgresql_balances_too(sql_store: SqlStore) -> None:
    rt, world = _program_with_a_few_ready_affiliates(sql_store)
    with recorded_statements(sql_store) as batch_statements:
        batch = payouts.prepare_batch(rt, world.session, world.program.id)
    assert batch.execution_count == _READY_AFFILIATES
    in_flight_reads = [sql for sql, _ in batch_statements if "FROM payout_executions" in sql]
    assert len(in_flight_reads) < _IDLE_AFFILIATES / 4
    if sql_store.dialect == "postgresql":  # SQLite's reads are in-process calls, no round trip
        assert len(batch_statements) < _IDLE_AFFILIATES

    payouts.cancel_batch(rt, world.session, batch.id)
    with recorded_statements(sql_store) as csv_statements:
        rows = payouts.ready_payouts_csv(rt, world.session, world.program.id)
    assert rows.count("\n") == 1 + _READY_AFFILIATES
    if sql_store.dialect == "postgresql":
        assert len(csv_statements) < _IDLE_AFFILIATES / 4


def _one_affiliate_earning(store: SqlStore, entries: int) -> PayoutWorld:
    """A program whose affiliate has ``entries`` approved commissions of 200 (hold 0 days)."""
    clock = ManualClock()
    pw = build_payout_world(store.runtime(clock=clock), clock, hold_days=0)
    for _ in range(entries):
        pw.earn(1_000)
    pw.past_hold()
    return pw


def test_a_payout_reads_the_entries_its_commission_paid_events_carry_together(sql_store: SqlStore) -> None:
    """``payout_executions.record_success`` once read each paid entry by ID: a payout of 1,000
    entries sent 1,000 statements for its ``commission.paid`` events."""
    entries = 30
    pw = _one_affiliate_earning(sql_store, entries)
    with recorded_statements(sql_store) as statements:
        execution = pw.mark_paid()
    assert execution.amount == entries * 200
    reads_by_id = [sql for sql, _ in statements if "WHERE commission_entries.id" in sql]
    assert len(reads_by_id) == 1
    paid = {event.data["id"] for event in pw.events(EventType.COMMISSION_PAID)}
    assert len(paid) == entries


def test_a_payout_writes_its_items_and_commission_paid_events_together(sql_store: SqlStore) -> None:
    """Mark-paid of 1,000 entries had sent 2,018 statements on PostgreSQL: an ``INSERT`` for each
    payout item and each ``commission.paid`` event (``payout_executions.create_execution``,
    ``Tx.emit_each``). Every entry still has its item and its event."""
    entries = 30
    pw = _one_affiliate_earning(sql_store, entries)
    with recorded_statements(sql_store) as statements:
        pw.mark_paid()
    item_inserts = [sql for sql, _ in statements if sql.startswith("INSERT INTO payout_items")]
    event_inserts = [sql for sql, _ in statements if sql.startswith("INSERT INTO events")]
    assert 1 <= len(item_inserts) <= 5  # SQLite: runs of a power of two rows (16 + 8 + 4 + 2)
    assert 1 <= len(event_inserts) <= 6  # and the payout.succeeded event
    items = pw.rt.read(lambda tx: tx.uow.payout_items.find_all({}))
    assert len(items) == entries
    paid = [event.data["id"] for event in pw.events(EventType.COMMISSION_PAID)]
    assert sorted(paid) == sorted(item.entry_id for item in items)


def test_a_canceled_payout_releases_its_items_in_one_statement(sql_store: SqlStore) -> None:
    """``payout_executions._release`` had updated each item of the payout by itself: 1,712
    statements to cancel a batch holding 1,100 entries on PostgreSQL."""
    entries = 30
    pw = _one_affiliate_earning(sql_store, entries)
    batch = pw.prepare()
    with recorded_statements(sql_store) as statements:
        payouts.cancel_batch(pw.rt, pw.world.session, batch.id)
    item_updates = [sql for sql, _ in statements if sql.startswith("UPDATE payout_items")]
    assert len(item_updates) == 1
    items = pw.rt.read(lambda tx: tx.uow.payout_items.find_all({}))
    assert len(items) == entries
    assert {item.active_entry_id for item in items} == {None}
    assert pw.prepare().execution_count == 1  # the released entries are payable again
