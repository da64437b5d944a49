"""A processor's inquiry (``refcore.rules.disputes``): an open dispute that holds the commission
and consumes none of the payment, until it escalates to a chargeback.

Found by a probe: an inquiry counted as an open dispute refused every refund the merchant made
while it was open, and the processor stops retrying a refused delivery after days while an
inquiry can stay open for months, so the refund and the reversal it owed were never recorded.

A payment of 10 000 at 20 %: its commission is 2 000; a refund of 3 000 reverses 600.
"""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.models import DisputeStatus, EntryKind, Payment
from refcore.services.runtime import Runtime
from tests.contract.scenario import World, build_world

A = 10_000
C = 2_000


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock, hold_days=0)


def paid(world: World) -> str:
    return world.pay(world.referred_customer(), A).record.payment_id


def _payment(world: World, payment_id: str) -> Payment:
    found = world.rt.read(lambda tx: tx.uow.payments.find_one({"payment_id": payment_id}))
    assert found is not None
    return found


def test_an_open_inquiry_holds_the_commission_and_consumes_nothing(world: World) -> None:
    pay = paid(world)

    recorded = world.dispute("du_1", pay, "opened", A, inquiry=True)

    assert recorded.record.inquiry and recorded.record.status is DisputeStatus.OPENED
    payment = _payment(world, pay)
    assert (payment.disputed_amount, payment.open_dispute_count) == (0, 1)
    balance = world.balance()
    assert (balance.held, balance.available) == (C, 0)


def test_a_refund_during_an_inquiry_is_recorded_and_reverses_its_share(world: World) -> None:
    pay = paid(world)
    world.dispute("du_1", pay, "opened", A, inquiry=True)

    assert world.refund(pay, 3_000).created

    txn = _payment(world, pay).id
    assert world.entry_sum(txn) == C - 600
    assert _payment(world, pay).refunded_amount == 3_000


def test_a_full_refund_during_an_inquiry_then_its_close_leaves_nothing_owed(world: World) -> None:
    pay = paid(world)
    world.dispute("du_1", pay, "opened", A, inquiry=True)
    world.refund(pay, A)

    world.dispute("du_1", pay, "withdrawn", A, inquiry=False)  # the processor's charge_refunded

    payment = _payment(world, pay)
    assert (payment.refunded_amount, payment.disputed_amount, payment.open_dispute_count) == (A, 0, 0)
    assert world.entry_sum(payment.id) == 0


def test_an_inquiry_that_escalates_consumes_its_amount_from_then_on(world: World) -> None:
    pay = paid(world)
    world.dispute("du_1", pay, "opened", 4_000, inquiry=True)

    escalated = world.dispute("du_1", pay, "opened", 4_000)

    assert not escalated.created and not escalated.record.inquiry
    payment = _payment(world, pay)
    assert (payment.disputed_amount, payment.open_dispute_count) == (4_000, 1)
    with world.rejects("amount_exceeds_payment"):
        world.refund(pay, 6_001)
    assert world.refund(pay, 6_000).created


def test_an_escalation_that_refunds_left_no_room_for_is_refused_and_changes_nothing(world: World) -> None:
    """Interface 3.1 rule 4 applies from the escalation on: refunds plus the chargeback within
    the payment. The inquiry stays open, holding the commission."""
    pay = paid(world)
    world.dispute("du_1", pay, "opened", A, inquiry=True)
    world.refund(pay, 3_000)
    before = world.snapshot()

    with world.rejects("amount_exceeds_payment", "amount"):
        world.dispute("du_1", pay, "opened", A)
    with world.rejects("amount_exceeds_payment", "amount"):
        world.dispute("du_1", pay, "lost", A)

    assert world.snapshot() == before


def test_an_inquiry_reported_lost_is_a_chargeback_and_reverses(world: World) -> None:
    pay = paid(world)
    world.dispute("du_1", pay, "opened", 4_000, inquiry=True)

    lost = world.dispute("du_1", pay, "lost", 4_000)

    assert lost.record.status is DisputeStatus.LOST and not lost.record.inquiry
    payment = _payment(world, pay)
    assert (payment.disputed_amount, payment.lost_amount, payment.open_dispute_count) == (4_000, 4_000, 0)
    assert [e.kind for e in world.entries(payment.id)] == [EntryKind.EARNED, EntryKind.REVERSAL]
    assert world.entry_sum(payment.id) == C - 800


def test_a_late_inquiry_report_never_moves_a_chargeback_back(world: World) -> None:
    pay = paid(world)
    world.dispute("du_1", pay, "opened", 4_000)

    late = world.dispute("du_1", pay, "opened", 4_000, inquiry=True)

    assert not late.created and not late.record.inquiry
    assert _payment(world, pay).disputed_amount == 4_000


def test_an_inquiry_closed_without_escalating_releases_the_hold(world: World) -> None:
    pay = paid(world)
    world.dispute("du_1", pay, "opened", A, inquiry=True)

    closed = world.dispute("du_1", pay, "withdrawn", A, inquiry=True)  # warning_closed

    assert closed.record.status is DisputeStatus.WITHDRAWN and closed.record.inquiry
    balance = world.balance()
    assert (balance.held, balance.available) == (0, C)


def test_an_inquiry_is_at_most_its_payment(world: World) -> None:
    pay = paid(world)
    with world.rejects("amount_exceeds_payment", "amount"):
        world.dispute("du_1", pay, "opened", A + 1, inquiry=True)
