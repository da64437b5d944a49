"""Decisions 4: the commission of a payment, consumption, the one ledger formula, entry status,
idempotency and the validation of amounts and currencies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.models import EntryKind
from refcore.services import affiliates
from refcore.services.runtime import Runtime
from tests.contract.scenario import LIVE, TEST, World, build_world
from tests.unit_of_work_log import watched

A = 10_000
C = 2_000


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def statuses(world: World, transaction_id: str) -> list[str]:
    return [e["status"] for e in world.commissions(transaction_id=transaction_id).data]


# -- the commission of a payment ------------------------------------------------------------------


@pytest.mark.parametrize(("amount", "bps", "expected"), [(2_999, 1_234, 370), (1, 9_999, 0), (7, 10_000, 7)])
def test_decisions_4_percent_commission_is_floor_of_amount_times_bps(
    runtime: Runtime, clock: ManualClock, amount: int, bps: int, expected: int
) -> None:
    world = build_world(runtime, clock, commission={"type": "percent", "bps": bps})
    payment = world.pay(world.referred_customer(), amount).record
    assert payment.commission_amount == expected
    assert world.entry_sum(payment.id) == expected


@pytest.mark.parametrize(("amount", "expected"), [(300, 300), (1_000, 500), (500, 500)])
def test_decisions_4_fixed_commission_is_at_most_the_payment(
    runtime: Runtime, clock: ManualClock, amount: int, expected: int
) -> None:
    world = build_world(runtime, clock, commission={"type": "fixed", "amount": 500})
    payment = world.pay(world.referred_customer(), amount).record
    assert world.entry_sum(payment.id) == expected


@pytest.mark.parametrize("commission", [{"type": "percent", "bps": 2_000}, {"type": "fixed", "amount": 500}])
def test_decisions_4_zero_amount_payment_records_history_without_commission(
    runtime: Runtime, clock: ManualClock, commission: dict[str, object]
) -> None:
    world = build_world(runtime, clock, commission=commission)
    recorded = world.pay(world.referred_customer(), 0)
    assert recorded.created and recorded.record.attributed
    assert recorded.record.commission_amount == 0
    assert world.entries() == []


def test_decisions_4_no_commission_after_commission_duration_months(
    runtime: Runtime, clock: ManualClock
) -> None:
    clock.set(datetime(2026, 1, 31, 12, tzinfo=UTC))
    world = build_world(runtime, clock, commission_duration_months=1)
    customer = world.referred_customer()
    clock.set(datetime(2026, 2, 28, 11, 59, tzinfo=UTC))  # Jan 31 + 1 month clamps to Feb 28
    inside = world.pay(customer, A).record
    clock.set(datetime(2026, 2, 28, 12, tzinfo=UTC))
    after = world.pay(customer, A).record
    assert (inside.commission_amount, after.commission_amount) == (C, 0)
    assert world.entry_sum(after.id) == 0


def test_decisions_4_lifetime_commission_when_duration_is_null(world: World, clock: ManualClock) -> None:
    customer = world.referred_customer()
    clock.advance(timedelta(days=3_650))
    assert world.pay(customer, A).record.commission_amount == C


def test_decisions_4_disabled_program_earns_no_new_commission(world: World) -> None:
    customer = world.referred_customer()
    before = world.pay(customer, A).record
    world.set_program_status("disable")
    after = world.pay(customer, A).record
    assert (before.commission_amount, after.commission_amount) == (C, 0)
    # Existing balances stay.
    assert world.entry_sum(before.id) == C
    assert world.balance().pending == C


def test_decisions_4_inactive_affiliate_earns_no_commission(world: World) -> None:
    customer = world.referred_customer()
    affiliates.disable(world.rt, world.session, world.affiliate.id)
    assert world.pay(customer, A).record.commission_amount == 0
    affiliates.enable(world.rt, world.session, world.affiliate.id)
    assert world.pay(customer, A).record.commission_amount == C


# -- consumption and the formula ------------------------------------------------------------------


def test_decisions_4_refunds_never_exceed_the_payment(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    world.refund(payment.payment_id, 6_000)
    with world.rejects("amount_exceeds_payment", "amount"):
        world.refund(payment.payment_id, 4_001)
    assert world.refund(payment.payment_id, 4_000).created
    with world.rejects("amount_exceeds_payment", "amount"):
        world.refund(payment.payment_id, 1)


def test_decisions_4_refund_of_a_zero_payment_exceeds_it(world: World) -> None:
    payment = world.pay(world.referred_customer(), 0).record
    with world.rejects("amount_exceeds_payment"):
        world.refund(payment.payment_id, 1)


def test_decisions_4_ledger_formula_after_refund(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    expected = [C]
    refunded = 0
    for amount in (3_333, 3_333, 3_334):
        refund = world.refund(payment.payment_id, amount).record
        refunded += amount
        target = C - (C * refunded) // A
        entries = world.entries(payment.id)
        assert sum(e.amount for e in entries) == target
        assert entries[-1].kind is EntryKind.REVERSAL
        assert entries[-1].source_id == refund.id
        expected.append(entries[-1].amount)
    assert expected == [C, -666, -667, -667]


def test_decisions_4_ledger_formula_counts_lost_disputes_only(world: World) -> None:
    payment = world.pay(world.referred_customer(), 3_001).record  # C = 600
    world.refund(payment.payment_id, 1_000)  # target 600 - floor(600*1000/3001) = 401
    world.dispute("dp_open", payment.payment_id, "opened", 1_000)  # opened: no change
    assert world.entry_sum(payment.id) == 401
    world.dispute("dp_lost", payment.payment_id, "lost", 1_000)  # 600 - floor(600*2000/3001) = 201
    assert world.entry_sum(payment.id) == 201
    world.dispute("dp_open", payment.payment_id, "lost", 1_000)  # 600 - floor(600*3000/3001) = 1
    assert world.entry_sum(payment.id) == 1
    world.dispute("dp_lost", payment.payment_id, "funds_reinstated", 1_000)  # back to 201
    assert world.entry_sum(payment.id) == 201
    kinds = [e.kind for e in world.entries(payment.id)]
    assert kinds == [
        EntryKind.EARNED,
        EntryKind.REVERSAL,
        EntryKind.REVERSAL,
        EntryKind.REVERSAL,
        EntryKind.REINSTATEMENT,
    ]


def test_decisions_4_each_entry_is_measured_against_the_target_before_the_change(world: World) -> None:
    """The current sum a new entry makes up to the target is the target the payment met before the
    change (its entries always meet the formula), so refunds and disputes add up none of the
    payment's entries: their number grows with every refund, and adding them up made a payment's
    thousandth refund cost three times its first (bench/history.md, tenth session)."""
    payment = world.pay(world.referred_customer(), 3_001).record  # C = 600
    world.rt, touched = watched(world.rt)
    refunded = 0
    for amount in (1, 2, 997, 1):
        world.refund(payment.payment_id, amount)
        refunded += amount
        assert world.entry_sum(payment.id) == 600 - (600 * refunded) // 3_001
    world.dispute("dp_lost", payment.payment_id, "lost", 1_000)
    world.dispute("dp_lost", payment.payment_id, "funds_reinstated", 1_000)
    assert world.entry_sum(payment.id) == 600 - (600 * refunded) // 3_001
    assert "commission_entries" in touched  # the watch saw the entries appended
    assert "metrics" not in touched


def test_decisions_4_no_entry_when_the_target_does_not_move(runtime: Runtime, clock: ManualClock) -> None:
    world = build_world(runtime, clock, commission={"type": "percent", "bps": 100})
    payment = world.pay(world.referred_customer(), 1_000).record  # C = 10
    world.refund(payment.payment_id, 50)  # 10 - floor(10*50/1000) = 10: nothing to append
    assert [e.kind for e in world.entries(payment.id)] == [EntryKind.EARNED]
    world.refund(payment.payment_id, 50)  # 10 - 1 = 9
    assert [e.amount for e in world.entries(payment.id)] == [10, -1]


def test_decisions_4_entries_are_append_only(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    earned = world.entries(payment.id)
    world.refund(payment.payment_id, 5_000)
    world.dispute("dp_1", payment.payment_id, "lost", 5_000)
    after = world.entries(payment.id)
    assert after[: len(earned)] == earned
    assert [e.amount for e in after] == [C, -1_000, -1_000]

    def rewrite(tx: object) -> None:
        entries = tx.uow.commission_entries  # type: ignore[attr-defined]
        entries.replace(entries.get(earned[0].id))

    before = world.snapshot()
    with pytest.raises(Exception):  # noqa: B017  (each store refuses in its own words)
        world.rt.transaction(rewrite)
    assert world.snapshot() == before


# -- entry status -------------------------------------------------------------------------------


def test_decisions_4_entry_is_pending_until_hold_days_then_approved(world: World, clock: ManualClock) -> None:
    payment = world.pay(world.referred_customer(), A).record
    assert payment.available_at == payment.created_at + timedelta(days=30)
    clock.set(payment.available_at - timedelta(seconds=1))
    assert statuses(world, payment.id) == ["pending"]
    assert world.balance().pending == C
    clock.set(payment.available_at)
    assert statuses(world, payment.id) == ["approved"]
    balance = world.balance()
    assert (balance.pending, balance.available) == (0, C)


def test_decisions_10_hold_days_zero_approves_at_once(runtime: Runtime, clock: ManualClock) -> None:
    world = build_world(runtime, clock, hold_days=0)
    payment = world.pay(world.referred_customer(), A).record
    assert statuses(world, payment.id) == ["approved"]


def test_decisions_4_positive_entries_are_held_while_a_dispute_is_open_never_a_reversal(
    runtime: Runtime, clock: ManualClock
) -> None:
    """A reversal is never held (docs/decisions.md, an improvement on decisions 4): it counts
    against ``available`` at once, while the earned entry waits for the dispute."""
    world = build_world(runtime, clock, hold_days=0)
    payment = world.pay(world.referred_customer(), A).record
    world.refund(payment.payment_id, 1_000)
    world.dispute("dp_1", payment.payment_id, "opened", 1_000)
    assert statuses(world, payment.id) == ["approved", "held"]  # newest first: the reversal, the earning
    balance = world.balance()
    assert (balance.held, balance.available) == (C, -200)
    world.dispute("dp_1", payment.payment_id, "withdrawn", 1_000)
    assert statuses(world, payment.id) == ["approved", "approved"]


def test_decisions_4_reversal_never_payable_before_its_earned_entry(world: World, clock: ManualClock) -> None:
    payment = world.pay(world.referred_customer(), A).record
    clock.advance(timedelta(days=20))
    world.refund(payment.payment_id, 5_000)
    earned, reversal = world.entries(payment.id)
    assert reversal.available_at == earned.available_at == payment.available_at
    assert world.balance().available == 0
    assert world.balance().pending == C - 1_000
    clock.advance(timedelta(days=10))
    assert world.balance().available == C - 1_000


def test_decisions_5_balance_is_live_only(world: World) -> None:
    world.pay(world.referred_customer(TEST), A, mode=TEST)
    assert world.balance().pending == 0
    world.pay(world.referred_customer(LIVE), A)
    assert world.balance().pending == C


# -- idempotency, currency, amounts ---------------------------------------------------------------


def test_decisions_4_payment_replay_answers_the_stored_payment_and_earns_once(world: World) -> None:
    customer = world.referred_customer()
    first = world.pay(customer, A, payment_id="pay_1")
    before = world.snapshot()
    replay = world.pay(customer, A, payment_id="pay_1")
    assert first.created and not replay.created
    assert replay.record == first.record
    assert world.snapshot() == before


def test_decisions_4_payment_currency_must_be_the_program_currency(world: World) -> None:
    customer = world.referred_customer()
    with world.rejects("currency_mismatch", "currency"):
        world.pay(customer, A, currency="eur")


@pytest.mark.parametrize("currency", ["USD", "us", "usdd", 840, ""])
def test_decisions_4_currency_must_be_a_lowercase_iso_code(world: World, currency: object) -> None:
    customer = world.referred_customer()
    with world.rejects("validation_error", "currency"):
        world.pay(customer, A, currency=currency)


BAD_AMOUNTS = [True, False, 100.0, "100", None, 2**31, -1]


@pytest.mark.parametrize("amount", BAD_AMOUNTS, ids=repr)
def test_decisions_4_payment_amount_must_be_an_int32_of_minor_units(world: World, amount: object) -> None:
    customer = world.referred_customer()
    with world.rejects("validation_error", "amount"):
        world.pay(customer, amount)


def test_decisions_4_payment_amount_may_be_the_int32_maximum(world: World) -> None:
    payment = world.pay(world.referred_customer(), 2**31 - 1).record
    assert payment.commission_amount == (2**31 - 1) * 2_000 // 10_000


@pytest.mark.parametrize("amount", [*BAD_AMOUNTS, 0], ids=repr)
def test_decisions_4_refund_and_dispute_amounts_must_be_positive_int32(world: World, amount: object) -> None:
    payment = world.pay(world.referred_customer(), A).record
    with world.rejects("validation_error", "amount"):
        world.refund(payment.payment_id, amount)
    with world.rejects("validation_error", "amount"):
        world.dispute("dp_1", payment.payment_id, "opened", amount)


@pytest.mark.parametrize("status", ["open", "OPENED", "", None, 1])
def test_decisions_4_dispute_status_must_be_one_of_the_five(world: World, status: object) -> None:
    payment = world.pay(world.referred_customer(), A).record
    with world.rejects("validation_error", "status"):
        world.dispute("dp_1", payment.payment_id, status, 100)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["payment_id", "customer_id", "program_id"])
def test_decisions_4_payment_identifiers_must_be_text(world: World, field: str) -> None:
    from refcore.services import revenue
    from refcore.services.revenue import PaymentReport

    customer = world.referred_customer()
    values: dict[str, object] = {
        "payment_id": "pay_1",
        "customer_id": customer.customer.id,
        "program_id": world.program.id,
        "amount": A,
        "currency": "usd",
    }
    values[field] = 12
    with world.rejects("validation_error", field):
        revenue.record_payment(world.rt, world.scope(), PaymentReport(**values))


def test_decisions_4_payment_for_unknown_customer_or_program_is_not_found(world: World) -> None:
    customer = world.referred_customer()
    with world.rejects("customer_not_found"):
        world.pay("rcus_01unknown", A)
    with world.rejects("program_not_found"):
        world.pay(customer, A, program_id="prg_01unknown")


def test_decisions_4_payment_program_must_be_the_referral_program(world: World) -> None:
    customer = world.referred_customer()
    other = world.add_program()
    with world.rejects("validation_error", "program_id"):
        world.pay(customer, A, program_id=other.id)


def test_decisions_1_customer_of_another_app_is_customer_not_found(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    stranger = build_world(runtime, clock)
    foreign = stranger.referred_customer()
    own = world.referred_customer()
    with world.rejects("customer_not_found"):
        world.pay(foreign.customer.id, A)
    with world.rejects("program_not_found"):
        world.pay(own, A, program_id=stranger.program.id)
