"""The store's aggregate ledger reads agree with deriving each entry's status in the core.

``LedgerReads.status_sums`` (one query on SQL) must give, for every affiliate and at every
moment, exactly the sums that applying :func:`refcore.rules.entry_status.entry_status` entry by
entry gives: paid and processing from payout items, held from open disputes, pending until
``available_at`` (the instant itself is approved), approved otherwise. ``payout_states`` looked
up by entry must agree with the per-affiliate derivation below (``payout_states``), and
``unsettled_entries`` must be exactly the entries that derivation finds neither paid nor
processing, so that what a payout takes (``funds_of``) is the approved balance.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.models import CommissionEntry, DisputeStatus, EntryStatus, Mode
from refcore.models.payout import PayoutExecutionStatus
from refcore.rules.entry_status import entry_status
from refcore.services import payouts
from refcore.services.payout_state import PayoutStates, funds_of
from refcore.services.runtime import Runtime, Tx
from tests.contract.scenario import World, build_world

LIVE = Mode.LIVE
TEST = Mode.TEST


def _active_items_of(tx: Tx, program_affiliate_id: str) -> list[Any]:
    """The affiliate's items that still hold their entry (live or succeeded payouts)."""
    items = tx.uow.payout_items.find_all({"program_affiliate_id": program_affiliate_id})
    return [item for item in items if item.active_entry_id is not None]


def payout_states(tx: Tx, entries: Iterable[CommissionEntry]) -> PayoutStates:
    """Paid and frozen entry IDs among ``entries``, derived item by item from each affiliate's
    payout items and their executions: the reference the store's lookup by entry must match."""
    wanted = {entry.id for entry in entries}
    affiliates = {entry.program_affiliate_id for entry in entries}
    paid: set[str] = set()
    processing: set[str] = set()
    statuses: dict[str, PayoutExecutionStatus | None] = {}
    for affiliate_id in affiliates:
        for item in _active_items_of(tx, affiliate_id):
            if item.entry_id not in wanted:
                continue
            if item.execution_id not in statuses:
                execution = tx.uow.payout_executions.get(item.execution_id)
                statuses[item.execution_id] = execution.status if execution else None
            status = statuses[item.execution_id]
            if status is PayoutExecutionStatus.SUCCEEDED:
                paid.add(item.entry_id)
            elif status is not None and status.live:
                processing.add(item.entry_id)
    return PayoutStates(paid=frozenset(paid), processing=frozenset(processing))


def _derived(tx: Tx, affiliate_id: str, mode: Mode) -> dict[EntryStatus, int]:
    """Entry by entry, with the core's rule: the reference the store's query must match."""
    entries = tx.uow.commission_entries.find_all({"program_affiliate_id": affiliate_id, "mode": mode})
    states = payout_states(tx, entries)
    sums = dict.fromkeys(EntryStatus, 0)
    for entry in entries:
        payment = tx.uow.payments.get(entry.transaction_id)
        status = entry_status(
            entry,
            now=tx.now,
            payment_held=payment is not None and payment.open_dispute_count > 0,
            paid=entry.id in states.paid,
            processing=entry.id in states.processing,
        )
        sums[status] += entry.amount
    return sums


def _assert_store_agrees(world: World, *affiliate_ids: str) -> None:
    def work(tx: Tx) -> None:
        for affiliate_id in affiliate_ids:
            for mode in (LIVE, TEST):
                sums = dict(tx.uow.ledger().status_sums(affiliate_id, mode, tx.now))
                assert sums == _derived(tx, affiliate_id, mode), mode
            entries = tx.uow.commission_entries.find_all({"program_affiliate_id": affiliate_id})
            expected = payout_states(tx, entries)
            settled = expected.paid | expected.processing
            for mode in (LIVE, TEST):
                unsettled = sorted(
                    (e for e in entries if e.mode is mode and e.id not in settled), key=lambda e: e.id
                )
                assert tx.uow.ledger().unsettled_entries(affiliate_id, mode) == unsettled, mode
            funds = funds_of(tx, affiliate_id)
            approved = tx.uow.ledger().status_sums(affiliate_id, LIVE, tx.now)[EntryStatus.APPROVED]
            assert funds.available == sum(e.amount for e in funds.payable) == approved
            found = tx.uow.ledger().payout_states([e.id for e in entries])
            assert (found.paid, found.processing) == (expected.paid, expected.processing)
            payments = {e.transaction_id for e in entries}
            held = {p for p in payments if tx.uow.payments.get(p).open_dispute_count > 0}  # type: ignore[union-attr]
            assert tx.uow.ledger().held_payments(payments) == held

        for mode in (LIVE, TEST):  # a page's balances read together, in the order asked
            together = tx.uow.ledger().status_sums_of(list(reversed(affiliate_ids)), mode, tx.now)
            assert list(together) == list(reversed(affiliate_ids))
            assert {a: dict(sums) for a, sums in together.items()} == {
                a: _derived(tx, a, mode) for a in affiliate_ids
            }, mode

    world.rt.read(work)


def test_status_sums_match_the_entry_status_rule_through_a_ledger_life(
    runtime: Runtime, clock: ManualClock
) -> None:
    world = build_world(runtime, clock, hold_days=10)
    second = world.add_affiliate()
    second_link = world.add_link(second)
    payments = [world.pay(world.referred_customer(), 10_000).record for _ in range(3)]
    other = world.pay(world.referred_customer(link=second_link), 7_000).record
    world.pay(world.referred_customer(TEST), 4_000, mode=TEST)  # Test mode: never in a payout
    _assert_store_agrees(world, world.affiliate.id, second.id)  # all pending

    world.advance(10)  # now == available_at: approved, not pending
    world.refund(payments[0].payment_id, 2_500)  # a reversal, approved at once
    world.dispute("dp_1", payments[1].payment_id, DisputeStatus.OPENED, 1_000)  # held
    _assert_store_agrees(world, world.affiliate.id, second.id)
    held = world.rt.read(lambda tx: tx.uow.ledger().held_payments([p.id for p in payments]))
    assert held == {payments[1].id}

    batch = payouts.prepare_batch(runtime, world.session, world.program.id)  # processing
    later = world.pay(world.referred_customer(), 5_000).record  # pending again
    world.dispute("dp_2", payments[2].payment_id, DisputeStatus.OPENED, 500)  # processing beats held
    _assert_store_agrees(world, world.affiliate.id, second.id)

    payouts.dispatch_batch(runtime, world.session, batch.id)
    payouts.mark_paid(runtime, world.session, second.id)  # second's payout succeeds: paid
    world.advance(11)
    world.refund(later.payment_id, 5_000)  # fully refunded: earned and reversal net to zero
    world.refund(other.payment_id, 1_000)  # a reversal after the payout: approved, negative
    world.dispute("dp_3", other.payment_id, DisputeStatus.OPENED, 500)  # paid beats held
    _assert_store_agrees(world, world.affiliate.id, second.id)


def test_status_sums_of_an_affiliate_without_entries_are_zero(runtime: Runtime, clock: ManualClock) -> None:
    world = build_world(runtime, clock)
    sums = world.rt.read(lambda tx: dict(tx.uow.ledger().status_sums(world.affiliate.id, LIVE, tx.now)))
    assert sums == dict.fromkeys(EntryStatus, 0)


def test_entries_by_id_are_the_stored_ones_each_once_in_id_order(
    runtime: Runtime, clock: ManualClock
) -> None:
    world = build_world(runtime, clock)
    recorded = [world.pay(world.referred_customer(), amount).record for amount in (1_000, 2_000, 3_000)]
    world.refund(recorded[0].payment_id, 500)  # a reversal is an entry too

    def work(tx: Tx) -> tuple[list[CommissionEntry], list[CommissionEntry]]:
        stored = tx.uow.commission_entries.find_all({"program_affiliate_id": world.affiliate.id})
        asked = [e.id for e in reversed(stored)] + [stored[1].id, "cme_missing"]
        return stored, tx.uow.ledger().entries(asked)

    stored, found = world.rt.read(work)
    assert len(stored) == 4
    assert found == sorted(stored, key=lambda e: e.id)
    assert world.rt.read(lambda tx: tx.uow.ledger().entries([])) == []


def test_entries_by_id_see_the_unit_of_works_own_uncommitted_entries(
    runtime: Runtime, clock: ManualClock
) -> None:
    world = build_world(runtime, clock)
    made = world.pay(world.referred_customer(), 1_000).record
    entry = world.rt.read(lambda tx: tx.uow.commission_entries.find_one({"transaction_id": made.id}))
    assert entry is not None
    seen: list[list[CommissionEntry]] = []

    def work(tx: Tx) -> None:
        copy = evolve(entry, id=tx.new_id("cme"), amount=entry.amount + 1)
        tx.uow.commission_entries.add(copy)
        seen.append([copy])
        seen.append(tx.uow.ledger().entries([copy.id, entry.id]))
        raise _Abandoned  # nothing of this test's own entry is kept

    with pytest.raises(_Abandoned):
        world.rt.transaction(work)
    (copy,), found = seen
    assert found == sorted([copy, entry], key=lambda e: e.id)
    assert world.rt.read(lambda tx: tx.uow.ledger().entries([copy.id])) == []


class _Abandoned(Exception):
    """Raised to end a unit of work without committing it."""
