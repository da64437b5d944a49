"""Racing threads through the services on one SQL database: exactly one record per caller ID, and
refunds and disputes on one payment never consume more than the payment."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from refcore.clocks import ManualClock
from refcore.errors import RefcoreError
from refcore.models import DisputeStatus, Payment
from refcore.rules.commission import ledger_target
from refcore.services.revenue import Recorded
from refcore_sqlstore import SqlStore
from tests.contract.scenario import World, build_world
from tests.sqlstore.raw import count, scalar

T = TypeVar("T")

THREADS = 12


def race(calls: list[Callable[[], T]]) -> list[T | RefcoreError]:
    """Run every call in its own thread, all released at once; results (or refcore errors) in order."""
    barrier = threading.Barrier(len(calls))
    results: list[T | RefcoreError | None] = [None] * len(calls)
    unexpected: list[BaseException] = []

    def run(index: int, call: Callable[[], T]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except RefcoreError as error:
            results[index] = error
        except BaseException as error:
            unexpected.append(error)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert unexpected == []
    return [r for r in results if r is not None]


def _world(store: SqlStore) -> World:
    clock = ManualClock()
    return build_world(store.runtime(clock=clock), clock)


def _stored_payment(world: World, payment: Payment) -> Payment:
    stored = world.rt.read(lambda tx: tx.uow.payments.get(payment.id))
    assert stored is not None
    return stored


def _assert_ledger_and_consumption(store: SqlStore, world: World, payment: Payment) -> None:
    stored = _stored_payment(world, payment)
    refunds = scalar(
        store, "SELECT coalesce(sum(amount), 0) FROM refunds WHERE transaction_id = ?", payment.id
    )
    disputed = scalar(
        store,
        "SELECT coalesce(sum(amount), 0) FROM disputes"
        " WHERE transaction_id = ? AND status IN ('opened', 'lost')",
        payment.id,
    )
    assert stored.refunded_amount == refunds
    assert stored.disputed_amount == disputed
    assert refunds + disputed <= stored.amount
    target = ledger_target(
        stored.commission_amount, stored.amount, stored.refunded_amount, stored.lost_amount
    )
    assert world.entry_sum(payment.id) == target


def test_the_same_payment_id_raced_makes_one_payment(sql_store: SqlStore) -> None:
    world = _world(sql_store)
    customer = world.referred_customer()
    results = race([lambda: world.pay(customer, 5_000, payment_id="pay_race")] * THREADS)
    recorded = [r for r in results if isinstance(r, Recorded)]
    assert len(recorded) == THREADS
    assert {r.record.id for r in recorded} == {recorded[0].record.id}
    assert sum(r.created for r in recorded) == 1
    assert count(sql_store, "payments", payment_id="pay_race") == 1
    assert count(sql_store, "commission_entries", transaction_id=recorded[0].record.id) == 1


def test_racing_refunds_never_exceed_the_payment(sql_store: SqlStore) -> None:
    world = _world(sql_store)
    payment = world.pay(world.referred_customer(), 10_000).record
    assert isinstance(payment, Payment)
    results = race(
        [lambda i=i: world.refund(payment.payment_id, 2_500, refund_id=f"re_{i}") for i in range(THREADS)]
    )
    accepted = [r for r in results if isinstance(r, Recorded)]
    refused = [r for r in results if isinstance(r, RefcoreError)]
    assert len(accepted) == 4
    assert {e.code for e in refused} == {"amount_exceeds_payment"}
    assert _stored_payment(world, payment).refunded_amount == 10_000
    _assert_ledger_and_consumption(sql_store, world, payment)


def test_the_same_refund_id_raced_makes_one_refund(sql_store: SqlStore) -> None:
    world = _world(sql_store)
    payment = world.pay(world.referred_customer(), 10_000).record
    results = race([lambda: world.refund(payment.payment_id, 1_000, refund_id="re_same")] * THREADS)
    assert all(isinstance(r, Recorded) for r in results)
    assert sum(r.created for r in results if isinstance(r, Recorded)) == 1
    assert count(sql_store, "refunds", refund_id="re_same") == 1
    assert _stored_payment(world, payment).refunded_amount == 1_000
    _assert_ledger_and_consumption(sql_store, world, payment)


def test_racing_refunds_and_disputes_on_one_payment_stay_within_it(sql_store: SqlStore) -> None:
    world = _world(sql_store)
    payment = world.pay(world.referred_customer(), 10_000).record
    calls: list[Callable[[], Recorded]] = []
    for i in range(THREADS // 2):
        calls.append(lambda i=i: world.refund(payment.payment_id, 2_000, refund_id=f"re_{i}"))
        calls.append(lambda i=i: world.dispute(f"dp_{i}", payment.payment_id, DisputeStatus.LOST, 2_000))
    results = race(calls)
    accepted = [r for r in results if isinstance(r, Recorded)]
    refused = [r for r in results if isinstance(r, RefcoreError)]
    assert len(accepted) == 5
    assert {e.code for e in refused} == {"amount_exceeds_payment"}
    stored = _stored_payment(world, payment)
    assert stored.refunded_amount + stored.disputed_amount == 10_000
    _assert_ledger_and_consumption(sql_store, world, payment)


def test_the_same_dispute_id_raced_makes_one_dispute(sql_store: SqlStore) -> None:
    world = _world(sql_store)
    payment = world.pay(world.referred_customer(), 10_000).record
    results = race(
        [lambda: world.dispute("dp_same", payment.payment_id, DisputeStatus.OPENED, 3_000)] * THREADS
    )
    assert all(isinstance(r, Recorded) for r in results)
    assert sum(r.created for r in results if isinstance(r, Recorded)) == 1
    assert count(sql_store, "disputes", dispute_id="dp_same") == 1
    assert _stored_payment(world, payment).disputed_amount == 3_000
    _assert_ledger_and_consumption(sql_store, world, payment)
