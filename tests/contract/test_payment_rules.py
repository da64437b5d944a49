"""Interface 4.1 payment, refund and dispute rules 1-10 (with decisions 4 and 11).

Several of the rules are guidance to the client ("report the parent first", "retry with the
same identity"); for those the tests check what the service guarantees so the guidance works.
"""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.models import EntryKind, EventType, RevenueSource
from refcore.services import revenue
from refcore.services.principal import Scope
from refcore.services.revenue import PaymentReport
from refcore.services.runtime import Runtime
from tests.contract.scenario import LIVE, TEST, World, build_world

A = 10_000
C = 2_000


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def test_interface_4_1_rule_1_refund_before_its_payment_is_payment_not_found_and_writes_nothing(
    world: World,
) -> None:
    customer = world.referred_customer()
    with world.rejects("payment_not_found"):
        world.refund("pay_late", 1_000, refund_id="re_early")
    with world.rejects("payment_not_found"):
        world.dispute("dp_early", "pay_late", "opened", 1_000)

    payment = world.pay(customer, A, payment_id="pay_late").record

    # The retry after the payment was accepted succeeds with the same identity.
    assert world.refund("pay_late", 1_000, refund_id="re_early").created
    assert world.dispute("dp_early", "pay_late", "opened", 1_000).created
    assert world.entry_sum(payment.id) == C - 200


def test_interface_4_1_rule_2_each_renewal_with_its_own_id_earns_again(world: World) -> None:
    customer = world.referred_customer()
    first = world.pay(customer, A, payment_id="inv_1").record
    renewal = world.pay(customer, A, payment_id="inv_2").record
    again = world.pay(customer, A, payment_id="inv_2")

    assert first.id != renewal.id
    assert not again.created and again.record.id == renewal.id
    assert [(e.transaction_id, e.amount) for e in world.entries()] == [(first.id, C), (renewal.id, C)]


def test_interface_4_1_rule_3_a_reported_payment_is_final_history_that_earns_at_once(world: World) -> None:
    """Cancellations and failed attempts are not reported, so whatever is reported counts as paid:
    it is kept, it earns at once, and only a refund or dispute can take the commission back."""
    customer = world.referred_customer()
    payment = world.pay(customer, A).record
    world.advance(400)
    world.pay(customer, 0)  # a zero report records history and changes nothing else

    assert world.entry_sum(payment.id) == C
    assert world.rt.read(lambda tx: tx.uow.payments.get(payment.id)) == payment


def test_interface_4_1_rule_4_a_reported_refund_or_loss_takes_effect_at_once(world: World) -> None:
    """Reports arrive only once complete, so the service applies each at once, without a pending state."""
    customer = world.referred_customer()
    payment = world.pay(customer, A).record
    world.refund(payment.payment_id, 2_500)
    assert world.entry_sum(payment.id) == C - 500
    world.dispute("dp_1", payment.payment_id, "lost", 2_500)
    assert world.entry_sum(payment.id) == C - 1_000


@pytest.mark.parametrize("field", ["amount", "currency", "customer_id", "program_id"])
def test_interface_4_1_rule_5_accepted_payment_identity_is_immutable(world: World, field: str) -> None:
    customer = world.referred_customer()
    other_customer = world.referred_customer()
    other_program = world.add_program(currency="eur")
    world.pay(customer, A, payment_id="pay_1")
    changed = {
        "amount": {"amount": A + 1},
        "currency": {"currency": "eur"},
        "customer_id": {"customer": other_customer},
        "program_id": {"program_id": other_program.id},
    }[field]
    arguments = {"customer": customer, "amount": A, "payment_id": "pay_1", **changed}

    with world.rejects("idempotency_conflict", "payment_id"):
        world.pay(**arguments)


def test_interface_4_1_rule_5_correction_is_a_new_refund_and_a_replacement_payment(world: World) -> None:
    customer = world.referred_customer()
    wrong = world.pay(customer, A, payment_id="pay_1").record
    world.refund("pay_1", A, refund_id="re_fix")
    right = world.pay(customer, 8_000, payment_id="pay_1b").record
    assert world.entry_sum(wrong.id) == 0
    assert world.entry_sum(right.id) == 1_600


def test_interface_4_1_rule_5_refund_identity_is_immutable(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    world.refund(payment.payment_id, 1_000, refund_id="re_1")
    with world.rejects("idempotency_conflict", "refund_id"):
        world.refund(payment.payment_id, 1_001, refund_id="re_1")


def test_interface_4_1_rule_6_refund_id_reused_for_another_payment_is_conflict_even_with_equal_amount(
    world: World,
) -> None:
    first = world.pay(world.referred_customer(), A).record
    second = world.pay(world.referred_customer(), A).record
    world.refund(first.payment_id, 1_000, refund_id="re_1")
    with world.rejects("idempotency_conflict", "refund_id"):
        world.refund(second.payment_id, 1_000, refund_id="re_1")


def test_interface_4_1_rule_6_refund_id_reused_for_an_unknown_payment_is_conflict_not_not_found(
    world: World,
) -> None:
    """The refund ID's identity is checked before the payment is looked for: a reused ID is a
    conflict whether or not the payment it now names exists."""
    first = world.pay(world.referred_customer(), A).record
    world.refund(first.payment_id, 1_000, refund_id="re_1")
    with world.rejects("idempotency_conflict", "refund_id"):
        world.refund("pay_never_reported", 1_000, refund_id="re_1")


@pytest.mark.parametrize(("identified_in", "reported_in"), [(TEST, LIVE), (LIVE, TEST)])
def test_interface_4_1_rule_7_mixed_test_and_live_attribution_is_mode_mismatch(
    world: World, identified_in: object, reported_in: object
) -> None:
    customer = world.referred_customer(identified_in)  # type: ignore[arg-type]
    with world.rejects("mode_mismatch"):
        world.pay(customer, A, mode=reported_in)  # type: ignore[arg-type]


def test_interface_4_1_rule_7_caller_ids_are_isolated_per_mode(world: World) -> None:
    live = world.pay(world.referred_customer(LIVE), A, payment_id="pay_1").record
    test = world.pay(world.referred_customer(TEST), 5_000, payment_id="pay_1", mode=TEST).record
    assert live.id != test.id
    assert (live.mode, test.mode) == (LIVE, TEST)
    world.refund("pay_1", 500, refund_id="re_1", mode=TEST)
    world.refund("pay_1", 700, refund_id="re_1", mode=LIVE)
    assert world.entry_sum(test.id) == 1_000 - 100
    assert world.entry_sum(live.id) == C - 140


def test_interface_4_1_rule_8_unattributed_payment_stays_in_history_without_commission(world: World) -> None:
    customer = world.referred_customer(email="partner@example.com")  # self-referral: unattributed
    assert not customer.referral.attributed

    recorded = world.pay(customer, A)

    assert recorded.created
    assert not recorded.record.attributed
    assert recorded.record.commission_amount == 0
    assert recorded.record.program_affiliate_id is None
    assert world.entries() == []
    assert [e.data["id"] for e in world.events(EventType.TRANSACTION_CREATED)] == [recorded.record.id]
    assert world.events(EventType.COMMISSION_CREATED) == []
    # Its refunds are history too, and reverse nothing.
    assert world.refund(recorded.record.payment_id, A).created
    assert world.entries() == []


def test_interface_4_1_rule_9_test_activity_and_zero_live_payments_do_not_lock_the_revenue_source(
    world: World,
) -> None:
    world.pay(world.referred_customer(TEST), A, mode=TEST)
    world.pay(world.referred_customer(LIVE), 0)
    assert world.current_app().live_revenue_source is None


def test_interface_4_1_rule_9_first_positive_live_payment_locks_the_revenue_source(world: World) -> None:
    world.pay(world.referred_customer(LIVE), 1)
    assert world.current_app().live_revenue_source is RevenueSource.API
    # Further API revenue is still accepted once locked to the API.
    assert world.pay(world.referred_customer(LIVE), A).created


def test_interface_4_1_rule_9_processor_connected_app_refuses_api_revenue(world: World) -> None:
    customer = world.referred_customer(LIVE)
    world.set_app_fields(processor_connected_live=True)
    with world.rejects("revenue_source_conflict"):
        world.pay(customer, A)
    # Only the connected mode refuses it.
    assert world.pay(world.referred_customer(TEST), A, mode=TEST).created
    test_customer = world.referred_customer(TEST)
    world.set_app_fields(processor_connected_test=True)
    with world.rejects("revenue_source_conflict"):
        world.pay(test_customer, A, mode=TEST)


def test_interface_4_1_rule_9_app_locked_to_processor_refuses_api_revenue(world: World) -> None:
    customer = world.referred_customer(LIVE)
    world.set_app_fields(live_revenue_source=RevenueSource.PROCESSOR)
    with world.rejects("revenue_source_conflict"):
        world.pay(customer, A)
    with world.rejects("revenue_source_conflict"):
        world.pay(customer, 0)


def test_interface_4_1_rule_10_replays_return_the_same_record_and_change_nothing(world: World) -> None:
    customer = world.referred_customer()
    payment = world.pay(customer, A, payment_id="pay_1").record
    refund = world.refund("pay_1", 1_000, refund_id="re_1").record
    dispute = world.dispute("dp_1", "pay_1", "opened", 2_000).record
    stored_payment = world.rt.read(lambda tx: tx.uow.payments.get(payment.id))
    before = world.snapshot()

    replayed = [
        world.pay(customer, A, payment_id="pay_1"),
        world.refund("pay_1", 1_000, refund_id="re_1"),
        world.dispute("dp_1", "pay_1", "opened", 2_000),
    ]

    assert [r.created for r in replayed] == [False, False, False]
    assert [r.record for r in replayed] == [stored_payment, refund, dispute]
    assert world.snapshot() == before


def test_interface_4_1_rule_10_a_replay_still_answers_after_the_payment_is_fully_consumed(
    world: World,
) -> None:
    payment = world.pay(world.referred_customer(), A).record
    refund = world.refund(payment.payment_id, A, refund_id="re_all").record
    before = world.snapshot()
    replay = world.refund(payment.payment_id, A, refund_id="re_all")
    assert (replay.created, replay.record) == (False, refund)
    assert world.snapshot() == before


def test_interface_4_1_rule_10_rejected_operations_are_terminal_and_change_nothing(world: World) -> None:
    customer = world.referred_customer()
    world.pay(customer, A, payment_id="pay_1")
    for _attempt in range(2):  # the same rejection every time: nothing was half-written
        with world.rejects("idempotency_conflict"):
            world.pay(customer, A + 1, payment_id="pay_1")
        with world.rejects("amount_exceeds_payment"):
            world.refund("pay_1", A + 1, refund_id="re_big")
        with world.rejects("validation_error", "amount"):
            world.refund("pay_1", "100", refund_id="re_text")
    assert world.entries()[0].kind is EntryKind.EARNED
    assert len(world.entries()) == 1


def test_interface_4_1_rule_10_replays_are_answered_after_the_processor_is_connected(
    world: World,
) -> None:
    """A stored answer never changes: exact replays of API reports made before the processor was
    connected still answer the stored record, while new API revenue is refused."""
    customer = world.referred_customer(LIVE)
    world.pay(customer, A, payment_id="pay_1")
    refund = world.refund("pay_1", 1_000, refund_id="re_1").record
    dispute = world.dispute("dp_1", "pay_1", "opened", 2_000).record
    world.set_app_fields(live_revenue_source=None, processor_connected_live=True)
    before = world.snapshot()

    assert world.refund("pay_1", 1_000, refund_id="re_1").record == refund
    assert world.dispute("dp_1", "pay_1", "opened", 2_000).record == dispute
    assert world.snapshot() == before
    with world.rejects("revenue_source_conflict"):
        world.dispute("dp_1", "pay_1", "lost", 2_000)
    with world.rejects("revenue_source_conflict"):
        world.refund("pay_1", 1_000, refund_id="re_2")


def test_interface_4_1_rule_9_source_lock_rechecks_the_processor_under_the_app_lock(
    world: World,
) -> None:
    """The first positive Live payment locks the source under the App's row lock, and checks the
    processor connection again there (a claim takes the same lock), so an App can never end up
    both connected to the processor and locked to API revenue."""
    from attrs import evolve

    from refcore.errors import RevenueSourceConflict
    from refcore.services import revenue

    customer = world.referred_customer(LIVE)
    app = world.current_app()
    world.set_app_fields(processor_connected_live=True)
    stale_view = evolve(app, processor_connected_live=False)

    def work(tx: object) -> None:
        revenue._lock_revenue_source(tx, stale_view, LIVE, RevenueSource.API, A)  # type: ignore[arg-type]

    with pytest.raises(RevenueSourceConflict):
        world.rt.transaction(work)
    assert world.current_app().live_revenue_source is None
    assert customer is not None


def test_a_library_scope_naming_no_app_is_app_not_found(world: World) -> None:
    """A key's scope always names its App; a library caller's ``Scope`` may not, and revenue
    for it had failed with a bare ``AssertionError``."""
    report = PaymentReport(
        payment_id="pay_nowhere",
        customer_id=world.referred_customer().customer.id,
        program_id=world.program.id,
        amount=1_000,
        currency="usd",
    )
    with world.rejects("app_not_found"):
        revenue.record_payment(world.rt, Scope(app_id="app_00000000000000000000000000", mode=LIVE), report)
