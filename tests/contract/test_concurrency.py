"""Decisions 4: "concurrent duplicates produce exactly one record". Several threads send the same
(or a competing) report at once, released together by a barrier; whatever the interleaving, the
store must end with one record, every caller must get an answer a sequential run could give, and
the consumption rule must hold. No timing is asserted: only outcomes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

import pytest

from refcore.clocks import ManualClock
from refcore.errors import RefcoreError
from refcore.services.runtime import Runtime
from tests.contract.scenario import World, build_world

T = TypeVar("T")
THREADS = 6
A = 10_000


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def at_once(calls: list[Callable[[], T]]) -> list[T | RefcoreError]:
    """Run the calls on their own threads, started together; each result or caller-facing error."""
    barrier = threading.Barrier(len(calls))
    results: list[T | RefcoreError | None] = [None] * len(calls)
    unexpected: list[BaseException] = []

    def run(index: int, call: Callable[[], T]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except RefcoreError as error:
            results[index] = error
        except BaseException as error:  # a store error that escaped the service: a failure
            unexpected.append(error)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert unexpected == []
    return results  # type: ignore[return-value]


def codes(results: list[object]) -> Counter[str]:
    return Counter(
        r.code if isinstance(r, RefcoreError) else ("created" if r.created else "replay")  # type: ignore[attr-defined]
        for r in results
    )


def test_decisions_4_concurrent_duplicate_payments_produce_one_record(world: World) -> None:
    customer = world.referred_customer()
    results = at_once([lambda: world.pay(customer, A, payment_id="pay_1")] * THREADS)

    assert codes(results) == Counter({"created": 1, "replay": THREADS - 1})
    assert len({r.record.id for r in results}) == 1
    payments = world.rt.read(lambda tx: tx.uow.payments.find_all({"payment_id": "pay_1"}))
    assert len(payments) == 1
    assert [e.amount for e in world.entries(payments[0].id)] == [2_000]


def test_decisions_4_concurrent_duplicate_refunds_produce_one_record(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    results = at_once([lambda: world.refund(payment.payment_id, A, refund_id="re_all")] * THREADS)

    # The duplicates answer the stored refund even though the first consumed the whole payment.
    assert codes(results) == Counter({"created": 1, "replay": THREADS - 1})
    assert len(world.rt.read(lambda tx: tx.uow.refunds.find_all({"refund_id": "re_all"}))) == 1
    assert world.entry_sum(payment.id) == 0


def test_decisions_4_concurrent_refunds_never_exceed_the_payment(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    calls = [lambda i=i: world.refund(payment.payment_id, 3_000, refund_id=f"re_{i}") for i in range(THREADS)]
    results = at_once(calls)

    assert codes(results) == Counter({"created": 3, "amount_exceeds_payment": THREADS - 3})
    stored = world.rt.read(lambda tx: tx.uow.payments.get(payment.id))
    assert stored.refunded_amount == 9_000
    assert world.entry_sum(payment.id) == 2_000 - 2_000 * 9_000 // A


def test_decisions_4_concurrent_reports_of_one_new_dispute_agree(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    statuses = ["opened", "lost"] * (THREADS // 2)
    calls = [lambda s=s: world.dispute("dp_1", payment.payment_id, s, 4_000) for s in statuses]
    results = at_once(calls)

    assert all(not isinstance(r, RefcoreError) for r in results)
    disputes = world.rt.read(lambda tx: tx.uow.disputes.find_all({"dispute_id": "dp_1"}))
    assert len(disputes) == 1
    assert disputes[0].status.value == "lost"  # opened then lost, or lost with delayed opened reports
    stored = world.rt.read(lambda tx: tx.uow.payments.get(payment.id))
    assert (stored.disputed_amount, stored.lost_amount, stored.open_dispute_count) == (4_000, 4_000, 0)
    assert world.entry_sum(payment.id) == 2_000 - 800


def test_decisions_4_concurrent_reuse_of_a_dispute_id_on_another_payment_is_a_conflict(world: World) -> None:
    first = world.pay(world.referred_customer(), A).record
    second = world.pay(world.referred_customer(), A).record
    calls = [
        lambda: world.dispute("dp_1", first.payment_id, "opened", 4_000),
        lambda: world.dispute("dp_1", second.payment_id, "lost", 4_000),
    ] * (THREADS // 2)
    results = at_once(calls)

    (dispute,) = world.rt.read(lambda tx: tx.uow.disputes.find_all({"dispute_id": "dp_1"}))
    owner = first if dispute.transaction_id == first.id else second
    # Every report naming the dispute's own payment is answered; every other one is a conflict.
    for index, result in enumerate(results):
        names_owner = (index % 2 == 0) == (owner is first)
        if names_owner:
            assert not isinstance(result, RefcoreError)
            assert result.record.id == dispute.id
        else:
            assert isinstance(result, RefcoreError) and result.code == "idempotency_conflict"
    assert codes(results)["created"] == 1
    # Only the dispute's own payment moved; the other payment's totals are untouched.
    for payment in (first, second):
        stored = world.rt.read(lambda tx, p=payment: tx.uow.payments.get(p.id))
        if payment.id == dispute.transaction_id:
            assert stored.disputed_amount == 4_000
        else:
            assert (stored.disputed_amount, stored.lost_amount, stored.open_dispute_count) == (0, 0, 0)
            assert world.entry_sum(payment.id) == 2_000


def test_decisions_3_concurrent_identify_of_one_customer_creates_one_customer(world: World) -> None:
    click_id = world.capture()
    results = at_once([lambda: world.identify(click_id, external_customer_id="user-1")] * THREADS)

    assert all(not isinstance(r, RefcoreError) for r in results)
    assert len({r.customer.id for r in results}) == 1  # type: ignore[union-attr]
    assert len({r.referral.id for r in results}) == 1  # type: ignore[union-attr]
    assert sum(r.created for r in results) == 1  # type: ignore[union-attr]
    assert (
        len(world.rt.read(lambda tx: tx.uow.referrals.find_all({"customer_id": results[0].customer.id}))) == 1
    )  # type: ignore[union-attr]


def test_decisions_3_concurrent_identify_of_an_email_only_customer_creates_one_customer(world: World) -> None:
    click_id = world.capture()
    results = at_once([lambda: world.identify(click_id, email="buyer@example.com")] * THREADS)

    assert all(not isinstance(r, RefcoreError) for r in results)
    assert len({r.customer.id for r in results}) == 1  # type: ignore[union-attr]
    assert len(world.rt.read(lambda tx: tx.uow.customers.find_all({"email": "buyer@example.com"}))) == 1
