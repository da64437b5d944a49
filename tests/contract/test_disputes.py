"""Interface 3.1: the dispute table, row by row, and its rules 1-4 (plus decisions 4 and 11).

Every test uses a payment of 10 000 at 20 %, so its commission ``C`` is 2 000 and a dispute of
4 000 is worth a reversal of ``floor(2000 * 4000 / 10000) = 800``.
"""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.models import DisputeStatus, EntryKind
from refcore.services.runtime import Runtime
from tests.contract.scenario import TEST, World, build_world

A = 10_000
C = 2_000


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    # hold_days 0: the earned entry is approved at once, so "approved commission is held" shows.
    return build_world(runtime, clock, hold_days=0)


def paid(world: World, amount: int = A) -> str:
    """A referred customer's payment; returns its caller ``payment_id``."""
    return world.pay(world.referred_customer(), amount).record.payment_id


def _txn_of(world: World, payment_id: str) -> str:
    return world.rt.read(lambda tx: tx.uow.payments.find_one({"payment_id": payment_id})).id


def statuses(world: World, payment_id: str) -> set[str]:
    return {e["status"] for e in world.commissions(transaction_id=_txn_of(world, payment_id)).data}


# -- the table, row by row ---------------------------------------------------------------------


def test_interface_3_1_none_reports_opened_creates_opened_and_holds_approved_commission(world: World) -> None:
    pay = paid(world)
    assert statuses(world, pay) == {"approved"}

    recorded = world.dispute("dp_1", pay, "opened", 4_000)

    assert recorded.created
    assert recorded.record.status is DisputeStatus.OPENED
    assert statuses(world, pay) == {"held"}
    balance = world.balance()
    assert (balance.held, balance.available, balance.pending) == (C, 0, 0)
    # Opening appends nothing: only the loss moves money.
    assert [e.kind for e in world.entries(_txn_of(world, pay))] == [EntryKind.EARNED]


def test_interface_3_1_none_reports_opened_requires_the_parent_payment(world: World) -> None:
    with world.rejects("payment_not_found"):
        world.dispute("dp_1", "pay_missing", "opened", 100)


def test_interface_3_1_none_reports_opened_only_within_the_payment(world: World) -> None:
    pay = paid(world)
    world.refund(pay, 7_000)
    with world.rejects("amount_exceeds_payment", "amount"):
        world.dispute("dp_1", pay, "opened", 3_001)
    assert world.dispute("dp_1", pay, "opened", 3_000).created


@pytest.mark.parametrize("outcome", ["won", "withdrawn"])
def test_interface_3_1_opened_reports_won_or_withdrawn_releases_hold_and_balance(
    world: World, outcome: str
) -> None:
    pay = paid(world)
    world.dispute("dp_1", pay, "opened", A)
    with world.rejects("amount_exceeds_payment"):
        world.refund(pay, 1)

    recorded = world.dispute("dp_1", pay, outcome, A)

    assert not recorded.created
    assert recorded.record.status is DisputeStatus(outcome)
    assert statuses(world, pay) == {"approved"}
    assert world.balance().available == C
    assert world.entry_sum(_txn_of(world, pay)) == C
    # No longer consumes the payment: the whole amount can now be refunded.
    assert world.refund(pay, A).created


def test_interface_3_1_opened_reports_lost_appends_proportional_reversal(world: World) -> None:
    pay = paid(world)
    opened = world.dispute("dp_1", pay, "opened", 4_000).record

    lost = world.dispute("dp_1", pay, "lost", 4_000)

    assert lost.record.status is DisputeStatus.LOST
    assert lost.record.id == opened.id
    entries = world.entries(_txn_of(world, pay))
    assert [(e.kind, e.amount) for e in entries] == [(EntryKind.EARNED, C), (EntryKind.REVERSAL, -800)]
    assert entries[-1].source_id == opened.id
    assert world.balance().available == C - 800
    # A lost dispute still consumes the payment.
    with world.rejects("amount_exceeds_payment"):
        world.refund(pay, 6_001)
    assert world.refund(pay, 6_000).created


def test_interface_3_1_lost_reports_funds_reinstated_appends_matching_reinstatement(world: World) -> None:
    pay = paid(world)
    world.dispute("dp_1", pay, "opened", 4_000)
    world.dispute("dp_1", pay, "lost", 4_000)

    reinstated = world.dispute("dp_1", pay, "funds_reinstated", 4_000)

    assert reinstated.record.status is DisputeStatus.FUNDS_REINSTATED
    entries = world.entries(_txn_of(world, pay))
    assert [(e.kind, e.amount) for e in entries] == [
        (EntryKind.EARNED, C),
        (EntryKind.REVERSAL, -800),
        (EntryKind.REINSTATEMENT, 800),
    ]
    assert entries[-1].source_id == reinstated.record.id
    # No longer consumes the payment balance.
    assert world.refund(pay, A).created


@pytest.mark.parametrize("outcome", ["won", "withdrawn"])
def test_interface_3_1_terminal_won_or_withdrawn_before_opened_is_accepted(
    world: World, outcome: str
) -> None:
    pay = paid(world)

    recorded = world.dispute("dp_1", pay, outcome, A)

    assert recorded.created
    assert recorded.record.status is DisputeStatus(outcome)
    assert statuses(world, pay) == {"approved"}
    assert world.entry_sum(_txn_of(world, pay)) == C
    assert world.refund(pay, A).created


@pytest.mark.parametrize("outcome", ["won", "withdrawn"])
def test_interface_3_1_terminal_won_or_withdrawn_before_opened_is_at_most_the_payment(
    world: World, outcome: str
) -> None:
    """It consumes nothing, but no dispute is larger than what was charged: one of 2**31 - 1 on a
    payment of A had been recorded. The whole amount, after a refund, is still accepted."""
    pay = paid(world)
    world.refund(pay, A // 2)
    with world.rejects("amount_exceeds_payment"):
        world.dispute("dp_big", pay, outcome, A + 1)
    assert world.dispute("dp_all", pay, outcome, A).created


def test_interface_3_1_terminal_lost_before_opened_reverses_and_consumes(world: World) -> None:
    pay = paid(world)

    recorded = world.dispute("dp_1", pay, "lost", 4_000)

    assert recorded.created
    assert recorded.record.status is DisputeStatus.LOST
    assert [e.amount for e in world.entries(_txn_of(world, pay))] == [C, -800]
    assert statuses(world, pay) == {"approved"}
    with world.rejects("amount_exceeds_payment"):
        world.refund(pay, 6_001)


def test_interface_3_1_terminal_lost_before_opened_only_within_the_payment(world: World) -> None:
    pay = paid(world)
    world.refund(pay, 7_000)
    with world.rejects("amount_exceeds_payment"):
        world.dispute("dp_1", pay, "lost", 3_001)


def test_decisions_11_funds_reinstated_without_lost_is_dispute_conflict(world: World) -> None:
    pay = paid(world)
    with world.rejects("dispute_conflict"):
        world.dispute("dp_1", pay, "funds_reinstated", 4_000)
    world.dispute("dp_1", pay, "opened", 4_000)
    with world.rejects("dispute_conflict"):
        world.dispute("dp_1", pay, "funds_reinstated", 4_000)
    world.dispute("dp_1", pay, "won", 4_000)
    with world.rejects("dispute_conflict"):
        world.dispute("dp_1", pay, "funds_reinstated", 4_000)


# -- rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [["won"], ["withdrawn"], ["lost"], ["opened", "won"], ["opened", "lost", "funds_reinstated"]],
    ids="-".join,
)
def test_interface_3_1_rule_1_delayed_opened_cannot_move_terminal_dispute_backward(
    world: World, history: list[str]
) -> None:
    pay = paid(world)
    for status in history:
        last = world.dispute("dp_1", pay, status, 4_000).record

    before = world.snapshot()
    delayed = world.dispute("dp_1", pay, "opened", 4_000)

    assert not delayed.created
    assert delayed.record == last
    assert world.snapshot() == before


def test_interface_3_1_rule_1_delayed_lost_after_reinstatement_is_unchanged(world: World) -> None:
    pay = paid(world)
    for status in ("opened", "lost", "funds_reinstated"):
        last = world.dispute("dp_1", pay, status, 4_000).record
    before = world.snapshot()
    assert world.dispute("dp_1", pay, "lost", 4_000).record == last
    assert world.snapshot() == before


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("won", "lost"),
        ("won", "withdrawn"),
        ("withdrawn", "won"),
        ("withdrawn", "lost"),
        ("lost", "won"),
        ("lost", "withdrawn"),
        ("funds_reinstated", "won"),
        ("funds_reinstated", "withdrawn"),
    ],
)
def test_interface_3_1_rule_2_conflicting_terminal_outcomes_are_dispute_conflict(
    world: World, first: str, then: str
) -> None:
    pay = paid(world)
    world.dispute("dp_1", pay, "opened", 4_000)
    if first == "funds_reinstated":
        world.dispute("dp_1", pay, "lost", 4_000)
    world.dispute("dp_1", pay, first, 4_000)

    with world.rejects("dispute_conflict", "status"):
        world.dispute("dp_1", pay, then, 4_000)


def test_interface_3_1_rule_3_overlapping_open_disputes_keep_commission_held_until_all_resolve(
    world: World,
) -> None:
    pay = paid(world)
    world.dispute("dp_1", pay, "opened", 3_000)
    world.dispute("dp_2", pay, "opened", 3_000)
    assert statuses(world, pay) == {"held"}

    world.dispute("dp_1", pay, "won", 3_000)
    assert statuses(world, pay) == {"held"}
    assert world.balance().held == C

    world.dispute("dp_2", pay, "lost", 3_000)
    assert statuses(world, pay) == {"approved"}
    assert world.balance().available == C - 600
    assert world.balance().held == 0


def test_interface_3_1_rule_3_an_open_dispute_holds_a_pending_entry_too(
    runtime: Runtime, clock: ManualClock
) -> None:
    world = build_world(runtime, clock, hold_days=30)
    pay = paid(world)
    assert statuses(world, pay) == {"pending"}
    world.dispute("dp_1", pay, "opened", 100)
    assert statuses(world, pay) == {"held"}
    world.dispute("dp_1", pay, "won", 100)
    assert statuses(world, pay) == {"pending"}
    world.advance(30)
    assert statuses(world, pay) == {"approved"}


def test_interface_3_1_rule_4_refunds_plus_opened_or_lost_disputes_cannot_exceed_the_payment(
    world: World,
) -> None:
    pay = paid(world)
    world.refund(pay, 2_000)
    world.dispute("dp_open", pay, "opened", 3_000)
    world.dispute("dp_lost", pay, "lost", 3_000)
    world.dispute("dp_won", pay, "won", 9_000)  # won before opened consumes nothing
    # 2 000 + 3 000 + 3 000 consumed; 2 000 remain.
    with world.rejects("amount_exceeds_payment"):
        world.refund(pay, 2_001)
    with world.rejects("amount_exceeds_payment"):
        world.dispute("dp_new", pay, "opened", 2_001)
    assert world.dispute("dp_new", pay, "opened", 2_000).created
    with world.rejects("amount_exceeds_payment"):
        world.refund(pay, 1)
    # Winning one frees its share again.
    world.dispute("dp_open", pay, "won", 3_000)
    assert world.refund(pay, 3_000).created


# -- identity (decisions 4, 11) ------------------------------------------------------------------


def test_decisions_4_dispute_status_replay_is_unchanged(world: World) -> None:
    pay = paid(world)
    first = world.dispute("dp_1", pay, "opened", 4_000).record
    before = world.snapshot()
    replay = world.dispute("dp_1", pay, "opened", 4_000)
    assert (replay.created, replay.record) == (False, first)
    assert world.snapshot() == before


def test_decisions_4_dispute_id_reused_with_other_amount_or_payment_is_idempotency_conflict(
    world: World,
) -> None:
    pay = paid(world)
    other = paid(world)
    world.dispute("dp_1", pay, "opened", 4_000)
    with world.rejects("idempotency_conflict", "dispute_id"):
        world.dispute("dp_1", pay, "lost", 4_001)
    with world.rejects("idempotency_conflict", "dispute_id"):
        world.dispute("dp_1", other, "opened", 4_000)


def test_decisions_11_dispute_of_a_payment_that_exists_only_in_the_other_mode_is_payment_not_found(
    world: World,
) -> None:
    pay = paid(world)
    with world.rejects("payment_not_found"):
        world.dispute("dp_1", pay, "opened", 100, mode=TEST)


def test_decisions_4_dispute_ids_are_isolated_per_mode(world: World) -> None:
    live = paid(world)
    test_pay = world.pay(world.referred_customer(TEST), A, mode=TEST, payment_id=live).record
    assert test_pay.payment_id == live
    a = world.dispute("dp_1", live, "opened", 4_000).record
    b = world.dispute("dp_1", live, "lost", 5_000, mode=TEST).record
    assert a.id != b.id
    assert (a.status, b.status) == (DisputeStatus.OPENED, DisputeStatus.LOST)
