"""Payout rules on every store (memory, SQLite, PostgreSQL): unique keys and row locks.

"Paid at most once" is a unique key on ``payout_items.active_entry_id`` and "one payout in
flight per affiliate" one on ``payout_executions.live_program_affiliate_id``; reports lock the
execution row. These tests check that each store enforces them, including under real
concurrency (threads, each with its own connection) on the SQL stores.
"""

from __future__ import annotations

import contextlib
import csv
import io
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, IdempotencyConflict, StateConflict
from refcore.models import EventType, ProgramAffiliate
from refcore.models.payout import (
    PayoutBatchStatus,
    PayoutExecution,
    PayoutExecutionStatus,
    PayoutRequestStatus,
)
from refcore.rules.entry_status import Balance
from refcore.services import (
    commissions,
    payout_accounts,
    payout_executions,
    payout_requests,
    payouts,
    revenue,
)
from refcore.services.runtime import Runtime, Tx
from tests.payouts.races import race_mark_paid_report_and_batch, run_together
from tests.payouts.world import PayoutWorld, affiliate_key, build_payout_world

T = TypeVar("T")


def test_the_full_payout_cycle_holds_on_every_store(runtime: Runtime, clock: ManualClock) -> None:
    pw = build_payout_world(runtime, clock)
    pw.earn(10_000)
    pw.past_hold()
    batch = pw.prepare()
    assert pw.balance() == Balance(processing=2000)
    [execution] = pw.dispatch(batch.id).executions
    failed = pw.report(execution.id, "failed", "k1")
    assert failed.execution.status is PayoutExecutionStatus.FAILED
    assert pw.balance() == Balance(available=2000)
    [second] = pw.dispatch(pw.prepare().id).executions
    assert pw.report(second.id, "succeeded", "k2").execution.status is PayoutExecutionStatus.SUCCEEDED
    assert pw.report(second.id, "succeeded", "k2").replay
    assert pw.balance() == Balance(paid=2000)
    assert len(pw.events(EventType.COMMISSION_PAID)) == 1
    pw.earn(5_000)
    pw.past_hold()
    assert pw.mark_paid().amount == 1000
    assert pw.balance() == Balance(paid=3000)


def test_a_dispute_opening_never_raises_what_an_affiliate_can_be_paid(
    runtime: Runtime, clock: ManualClock
) -> None:
    """Probe T: an open dispute held the payment's reversal too, so it left ``available``: an
    affiliate owing 1,000 (a refund after their payout) was shown 1,000 available and paid it as
    soon as a dispute of that payment opened. A reversal is never held
    (``refcore.rules.entry_status``); the positive commission of a disputed payment still is."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    first = pw.earn(10_000)  # 2,000 of commission
    assert pw.mark_paid().amount == 2000
    pw.world.refund(first, 5_000)  # a reversal of -1,000, after the payout
    pw.earn(5_000)  # 1,000 more: the affiliate nets to 0
    assert pw.balance() == Balance(available=0, paid=2000)

    pw.world.dispute("dp_after_payout", first, "opened", 1_000)
    assert pw.balance() == Balance(available=0, paid=2000)
    assert pw.ready() == []
    with pytest.raises(StateConflict):
        pw.mark_paid()
    listed = commissions.list_commissions(pw.rt, pw.world.scope(), {}, limit=100).data
    assert [(e["amount"], e["status"]) for e in listed if e["amount"] < 0] == [(-1000, "approved")]

    second = pw.earn(10_000)  # a disputed payment's own commission is still held
    pw.world.dispute("dp_new", second, "opened", 1_000)
    assert pw.balance() == Balance(held=2000, available=0, paid=2000)
    pw.world.dispute("dp_after_payout", first, "won", 1_000)
    pw.world.dispute("dp_new", second, "won", 1_000)
    assert pw.balance() == Balance(available=2000, paid=2000)
    assert pw.mark_paid().amount == 2000


def test_mark_paid_with_another_amount_than_the_ready_payout_changes_nothing(
    runtime: Runtime, clock: ManualClock
) -> None:
    """Mark-paid's ``amount`` guard, on both of its paths (a dispatched payout, the available
    balance): a mismatch is ``state_conflict`` and its unit of work leaves no trace."""
    pw = build_payout_world(runtime, clock)
    affiliate = pw.world.affiliate.id

    def mark_paid(amount: int) -> Any:
        return payouts.mark_paid(pw.rt, pw.world.session, affiliate, amount=amount)

    pw.earn(10_000)
    pw.past_hold()
    [execution] = pw.dispatch(pw.prepare().id).executions
    with pytest.raises(StateConflict) as caught:
        mark_paid(1999)
    assert caught.value.param == "amount"
    assert pw.balance() == Balance(processing=2000)
    assert pw.events(EventType.PAYOUT_SUCCEEDED) == []
    assert mark_paid(2000).id == execution.id

    pw.earn(5_000)
    pw.past_hold()
    with pytest.raises(StateConflict):
        mark_paid(2000)  # a retry of the first, after more money arrived
    assert pw.balance() == Balance(available=1000, paid=2000)
    assert len(pw.events(EventType.PAYOUT_SUCCEEDED)) == 1
    assert mark_paid(1000).amount == 1000
    assert pw.balance() == Balance(paid=3000)


def _two_dispatched_payouts(pw: PayoutWorld) -> tuple[Any, Any, ProgramAffiliate]:
    """Dispatched payouts of 2,000 to the world's affiliate and to a second one: both, and the second."""
    other = pw.world.add_affiliate("other@example.com")
    pw.earn(10_000)
    pw.earn(10_000, other)
    pw.past_hold()
    executions = pw.dispatch(pw.prepare().id).executions
    by_affiliate = {execution.program_affiliate_id: execution for execution in executions}
    return by_affiliate[pw.world.affiliate.id], by_affiliate[other.id], other


@pytest.mark.parametrize("outcome", ["succeeded", "failed"])
def test_interface_6_5_a_report_key_spent_on_another_execution_is_an_idempotency_conflict(
    runtime: Runtime, clock: ManualClock, outcome: str
) -> None:
    """The interface asks for a unique ``Idempotency-Key`` per report: a key that already
    reported one execution of the App is refused on another, which stays ``ready`` with its
    money in flight; the first report's replay is still answered; another App may use the key."""
    pw = build_payout_world(runtime, clock)
    first, second, other = _two_dispatched_payouts(pw)
    pw.report(first.id, "succeeded", "run-1")
    events_before = len(pw.world.events())

    with pytest.raises(IdempotencyConflict) as caught:
        pw.report(second.id, outcome, "run-1")
    assert caught.value.param == "Idempotency-Key"
    [stored] = runtime.read(lambda tx: [tx.uow.payout_executions.get(second.id)])
    assert stored == second
    assert len(pw.world.events()) == events_before
    assert pw.balance(other) == Balance(processing=2000)

    assert pw.report(first.id, "succeeded", "run-1").replay
    assert pw.report(second.id, outcome, "run-2").execution.status is PayoutExecutionStatus(outcome)
    other_app = build_payout_world(runtime, clock)
    other_app.earn(10_000)
    other_app.past_hold()
    [elsewhere] = other_app.dispatch(other_app.prepare().id).executions
    assert not other_app.report(elsewhere.id, "succeeded", "run-1").replay


def test_a_report_settled_with_a_spent_key_before_migration_0010_still_answers_its_replay(
    runtime: Runtime, clock: ManualClock
) -> None:
    """An earlier version let an App spend one key on several executions; migration 0010
    registers the key for the earliest. The later one keeps the key on its execution, and a
    replay of its report is answered as a replay, not refused."""
    pw = build_payout_world(runtime, clock)
    first, second, _ = _two_dispatched_payouts(pw)
    pw.report(first.id, "succeeded", "run-1")
    settled = pw.report(second.id, "succeeded", "run-2").execution

    def as_an_earlier_version_left_it(tx: Tx) -> None:
        tx.uow.payout_executions.replace(evolve(settled, idempotency_key="run-1"))
        # Migration 0010 made no row for it; repositories cannot delete, so its row names
        # another key, which the replay must not need either.
        registered = tx.uow.payout_report_keys.get(second.id)
        tx.uow.payout_report_keys.replace(evolve(registered, idempotency_key="not-its-key"))
        tx.uow.commit()

    with runtime.unit_of_work() as uow:
        as_an_earlier_version_left_it(Tx(uow=uow, now=clock.now(), ids=runtime.ids))
    replayed = pw.report(second.id, "succeeded", "run-1")
    assert replayed.replay and replayed.execution.id == second.id


def test_interface_6_5_two_reports_racing_to_spend_one_key_settle_one_execution(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key's uniqueness holds across server processes because the store keeps it: here the
    first report is held after it found the key unspent, and a report of another execution with
    the same key runs meanwhile. Exactly one of them settles its execution; the other is an
    ``idempotency_conflict`` and leaves its execution ``ready``."""
    pw = build_payout_world(runtime, clock)
    first, second, _ = _two_dispatched_payouts(pw)

    def report(execution_id: str) -> Callable[[], Any]:
        def call() -> Any:
            try:
                return pw.report(execution_id, "succeeded", "run-1").execution.status
            except IdempotencyConflict as refused:
                return refused

        return call

    results = held_after_its_read(
        monkeypatch, payout_executions, "_refuse_spent_key", report(first.id), report(second.id)
    )
    assert sorted(type(result).__name__ for result in results) == [
        "IdempotencyConflict",
        "PayoutExecutionStatus",
    ]
    stored = runtime.read(lambda tx: [tx.uow.payout_executions.get(e.id) for e in (first, second)])
    assert sorted(execution.status.value for execution in stored) == ["ready", "succeeded"]
    assert len(pw.events(EventType.PAYOUT_SUCCEEDED)) == 1


def test_a_canceled_batch_gives_its_money_back_and_announces_nothing(
    runtime: Runtime, clock: ManualClock
) -> None:
    """docs/payouts.md, canceling a batch: a prepared batch moves to ``canceled`` with each of its
    executions; their entries are available again, the affiliate's open request is promised to
    no payout, no event is emitted, and the affiliates are free for mark-paid or a new batch. A
    canceled batch can be neither dispatched nor canceled again, and its payouts not reported."""
    pw = build_payout_world(runtime, clock)
    principal, _ = affiliate_key(runtime, pw.world.affiliate)
    other = pw.world.add_affiliate("other@example.com")
    pw.earn(10_000)
    pw.earn(5_000, other)
    pw.past_hold()
    request = pw.request(principal)
    batch = pw.prepare()
    assert pw.balance() == Balance(processing=2000)
    events_before = len(pw.world.events())

    canceled = payouts.cancel_batch(runtime, pw.world.session, batch.id)
    assert (canceled.batch.status, canceled.batch.canceled_at) == (PayoutBatchStatus.CANCELED, clock.now())
    assert {e.status for e in canceled.executions} == {PayoutExecutionStatus.CANCELED}
    assert len(canceled.executions) == 2
    stored = payouts.get_batch(runtime, pw.world.session, batch.id)
    assert stored == canceled
    assert len(pw.world.events()) == events_before
    assert (pw.balance(), pw.balance(other)) == (Balance(available=2000), Balance(available=1000))
    [open_request] = runtime.read(lambda tx: tx.uow.payout_requests.find_all({}))
    assert (open_request.id, open_request.status, open_request.payout_execution_id) == (
        request.id,
        PayoutRequestStatus.OPEN,
        None,
    )
    assert sorted(ready.amount for ready in pw.ready()) == [1000, 2000]

    for again in (payouts.cancel_batch, payouts.dispatch_batch):
        with pytest.raises(StateConflict):
            again(runtime, pw.world.session, batch.id)
    with pytest.raises(StateConflict):
        pw.report(canceled.executions[0].id, "succeeded", "run-1")
    assert pw.mark_paid().amount == 2000
    [paid_request] = runtime.read(lambda tx: tx.uow.payout_requests.find_all({}))
    assert paid_request.status is PayoutRequestStatus.PAID
    next_batch = pw.prepare()
    [second] = pw.dispatch(next_batch.id).executions
    assert (second.program_affiliate_id, second.amount) == (other.id, 1000)
    with pytest.raises(StateConflict):
        payouts.cancel_batch(runtime, pw.world.session, next_batch.id)  # dispatched: too late
    assert pw.balance(other) == Balance(processing=1000)


@pytest.mark.parametrize("attempt", range(3))
def test_a_batch_dispatched_and_canceled_at_once_is_either_one_never_both(
    runtime: Runtime, clock: ManualClock, attempt: int
) -> None:
    """The batch's row lock orders a dispatch and a cancellation racing across processes: one of
    them applies, the other is a ``state_conflict``, and the payouts, their money and the events
    agree with the one that applied."""
    pw = build_payout_world(runtime, clock)
    pw.earn(10_000)
    pw.past_hold()
    batch = pw.prepare()
    session = pw.world.session
    results = run_together(
        [
            lambda: payouts.dispatch_batch(runtime, session, batch.id),
            lambda: payouts.cancel_batch(runtime, session, batch.id),
        ]
    )
    [applied] = [result for result in results if not isinstance(result, StateConflict)]
    assert sum(isinstance(result, StateConflict) for result in results) == 1
    [execution] = runtime.read(lambda tx: tx.uow.payout_executions.find_all({}))
    ready_events = pw.events(EventType.PAYOUT_READY)
    if applied.batch.status is PayoutBatchStatus.DISPATCHED:
        assert execution.status is PayoutExecutionStatus.READY and len(ready_events) == 1
        assert pw.balance() == Balance(processing=2000)
    else:
        assert execution.status is PayoutExecutionStatus.CANCELED and ready_events == []
        assert pw.balance() == Balance(available=2000)


def test_a_store_refuses_a_second_live_item_for_one_entry(runtime: Runtime, clock: ManualClock) -> None:
    pw = build_payout_world(runtime, clock)
    pw.earn(10_000)
    pw.past_hold()
    pw.prepare()

    def duplicate(tx: Tx) -> None:
        [item] = tx.uow.payout_items.find_all({})
        tx.uow.payout_items.add(evolve(item, id=tx.new_id("pit")))
        tx.uow.commit()

    with pytest.raises(ConcurrentWrite), runtime.unit_of_work() as uow:
        duplicate(Tx(uow=uow, now=clock.now(), ids=runtime.ids))


def test_a_store_refuses_a_second_report_with_one_key_in_one_app(
    runtime: Runtime, clock: ManualClock
) -> None:
    pw = build_payout_world(runtime, clock)
    first, second, _ = _two_dispatched_payouts(pw)
    pw.report(first.id, "succeeded", "run-1")

    def duplicate(tx: Tx) -> None:
        [spent] = tx.uow.payout_report_keys.find_all({})
        tx.uow.payout_report_keys.add(evolve(spent, id=second.id))
        tx.uow.commit()

    with pytest.raises(ConcurrentWrite), runtime.unit_of_work() as uow:
        duplicate(Tx(uow=uow, now=clock.now(), ids=runtime.ids))


@pytest.mark.parametrize("attempt", range(3))
def test_racing_mark_paid_report_and_batch_pay_each_entry_once(
    runtime: Runtime, clock: ManualClock, attempt: int
) -> None:
    race_mark_paid_report_and_batch(build_payout_world(runtime, clock))


INT32_MAX = 2**31 - 1


def test_a_payout_beyond_32_bits_is_paid_on_every_store(runtime: Runtime, clock: ManualClock) -> None:
    """One amount fits a signed 32-bit integer (interface 2.2); a sum of them need not. Two
    payments of the largest amount at a 100 % commission make a payout of twice that: the
    request, the batch, its execution and mark-paid each hold it exactly (on PostgreSQL they
    were ``integer`` columns, and paying failed with a 500 on every try)."""
    pw = build_payout_world(runtime, clock, commission={"type": "percent", "bps": 10_000}, hold_days=0)
    pw.earn(INT32_MAX)
    pw.earn(INT32_MAX)
    pw.past_hold()
    owed = 2 * INT32_MAX
    assert pw.balance() == Balance(available=owed)
    principal, _ = affiliate_key(runtime, pw.world.affiliate)
    assert pw.request(principal).amount == owed
    assert [ready.amount for ready in pw.ready()] == [owed]
    batch = pw.prepare()
    assert batch.total == owed
    [execution] = pw.dispatch(batch.id).executions
    assert execution.amount == owed
    assert pw.report(execution.id, "failed", "k1").execution.amount == owed
    assert pw.mark_paid().amount == owed
    assert pw.balance() == Balance(paid=owed)


def held_after_its_read(
    monkeypatch: pytest.MonkeyPatch, module: Any, read: str, first: Callable[[], T], other: Callable[[], Any]
) -> tuple[T, Any]:
    """Run ``first``, hold it just after its first call of ``module.read`` (a read of the
    balance or the funds), run ``other`` meanwhile, and let ``first`` go on once ``other`` has
    finished or waited half a second (it finishes early only if it did not wait for ``first``).
    Both results."""
    read_done, may_go_on = threading.Event(), threading.Event()
    real_read = getattr(module, read)

    def held_read(*args: Any) -> Any:
        value = real_read(*args)
        if not read_done.is_set():
            read_done.set()
            assert may_go_on.wait(10)
        return value

    monkeypatch.setattr(module, read, held_read)
    with ThreadPoolExecutor(max_workers=2) as pool:
        running_first = pool.submit(first)
        assert read_done.wait(10)
        running_other = pool.submit(other)
        with contextlib.suppress(TimeoutError):
            running_other.result(timeout=0.5)
        may_go_on.set()
        return running_first.result(timeout=10), running_other.result(timeout=10)


def request_held_during(
    pw: PayoutWorld, monkeypatch: pytest.MonkeyPatch, other: Callable[[], T]
) -> tuple[Any, T]:
    """The affiliate's payout request, held after its read of the balance while ``other`` runs."""
    principal, _ = affiliate_key(pw.rt, pw.world.affiliate)
    request, result = held_after_its_read(
        monkeypatch, payout_requests, "live_balance", lambda: pw.request(principal), other
    )
    return request, result


def paid_while_held_before_its_lock(
    pw: PayoutWorld, monkeypatch: pytest.MonkeyPatch, payout: str, other: Callable[[], T]
) -> tuple[PayoutExecution, T]:
    """A payout (``"mark_paid"``, or a batch then dispatched and reported ``succeeded``) held
    after its unit of work began and before it locks the affiliate, while ``other`` runs: the
    payout that succeeded, and what ``other`` returned."""

    def pay() -> Any:
        return pw.mark_paid() if payout == "mark_paid" else pw.prepare()

    before_its_lock = "_locked_executions" if payout == "mark_paid" else "live_balances"
    paid, result = held_after_its_read(monkeypatch, payouts, before_its_lock, pay, other)
    if payout == "batch":
        [paid] = pw.dispatch(paid.id).executions
        pw.report(paid.id, "succeeded", "k1")
    return paid, result


def test_a_payout_request_made_while_mark_paid_pays_its_money_is_closed_as_paid(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/payouts.md: an open request becomes ``paid`` when a payout to its affiliate succeeds.

    The request holds its affiliate's row lock from its first read to its commit. The request
    here is held just after it read the balance, and mark-paid runs meanwhile: it must wait for
    the request (and then close it as paid), not pay the balance and miss the request that was
    not yet committed. On PostgreSQL it did not wait, and the request stayed ``open`` for money
    already paid, refusing every later request."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    pw.earn(10_000)
    pw.past_hold()
    request, execution = request_held_during(pw, monkeypatch, pw.mark_paid)

    assert execution.amount == 2000
    [stored] = runtime.read(lambda tx: tx.uow.payout_requests.find_all({}))
    assert (stored.id, stored.status, stored.payout_execution_id) == (
        request.id,
        PayoutRequestStatus.PAID,
        execution.id,
    )
    assert pw.balance() == Balance(paid=2000)


def test_a_payout_request_made_while_a_batch_is_prepared_is_paid_by_that_batch(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch names the open request whose money it froze (docs/payouts.md), under the
    affiliate's row lock. The request here is held after its read of the balance while the
    batch is prepared: the batch must wait for it, name it, and its payout close it as paid."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    pw.earn(10_000)
    pw.past_hold()
    request, batch = request_held_during(pw, monkeypatch, pw.prepare)

    [execution] = pw.dispatch(batch.id).executions
    pw.report(execution.id, "succeeded", "k1")
    [stored] = runtime.read(lambda tx: tx.uow.payout_requests.find_all({}))
    assert (stored.id, stored.amount, stored.status, stored.payout_execution_id) == (
        request.id,
        2000,
        PayoutRequestStatus.PAID,
        execution.id,
    )


@pytest.mark.parametrize("payout", ["mark_paid", "batch"])
def test_a_request_for_money_that_came_after_a_payouts_read_is_not_closed_by_that_payout(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, payout: str
) -> None:
    """docs/payouts.md: a request being made either is named by the payout that froze its money,
    or asks only for what the payout left. Here a payout has read the affiliate's 2,000 when a
    payment adds 1,000 and the affiliate asks for its balance. The payout read the funds under
    the affiliate's row lock, so the request waits for it and asks for the 1,000 left, and stays
    open after the payout succeeds. On PostgreSQL the payout had read first and locked later:
    the request asked for 3,000 and was closed as paid by the payout of 2,000."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    principal, _ = affiliate_key(pw.rt, pw.world.affiliate)
    pw.earn(10_000)
    pw.past_hold()

    def pay() -> Any:
        if payout == "mark_paid":
            return pw.mark_paid()
        return pw.prepare()

    def earn_then_request() -> Any:
        pw.earn(5_000)
        return pw.request(principal)

    paid, request = held_after_its_read(monkeypatch, payouts, "funds_of", pay, earn_then_request)
    if payout == "batch":
        [paid] = pw.dispatch(paid.id).executions
        pw.report(paid.id, "succeeded", "k1")
    assert paid.amount == 2000
    [stored] = runtime.read(lambda tx: tx.uow.payout_requests.find_all({}))
    assert (stored.id, stored.amount, stored.status, stored.payout_execution_id) == (
        request.id,
        1000,
        PayoutRequestStatus.OPEN,
        None,
    )
    assert pw.balance() == Balance(available=1000, paid=2000)


@pytest.mark.parametrize("payout", ["mark_paid", "batch"])
def test_a_request_made_after_a_payout_began_is_closed_only_by_a_payout_of_what_it_counted(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, payout: str
) -> None:
    """docs/payouts.md: a request being made either is named by the payout that pays its money,
    or asks only for what the payout left. The payout here began (its unit of work's moment is
    fixed) and is held before it locks the affiliate; a second later 1,000 more becomes
    available and the affiliate asks for its 3,000. On PostgreSQL the request commits first,
    and the payout, which read the funds at its own earlier moment, paid 2,000 and closed the
    request for 3,000 as paid (probe P). It must run again and pay the 3,000. Where the payout
    holds the store (the memory store, SQLite's write lock) the request waits and asks for the
    1,000 left: either way the request's amount is what the payout that closes it paid, or what
    the payout left."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    principal, _ = affiliate_key(pw.rt, pw.world.affiliate)
    pw.earn(10_000)
    pw.past_hold()

    def later_earn_then_request() -> Any:
        clock.advance(timedelta(seconds=1))  # available after the payout's moment
        pw.earn(5_000)
        return pw.request(principal)

    paid, request = paid_while_held_before_its_lock(pw, monkeypatch, payout, later_earn_then_request)
    [stored] = runtime.read(lambda tx: tx.uow.payout_requests.find_all({}))
    assert stored.id == request.id
    if stored.status is PayoutRequestStatus.PAID:
        assert (stored.payout_execution_id, stored.amount, paid.amount) == (paid.id, 3000, 3000)
        assert pw.balance() == Balance(paid=3000)
    else:
        assert (stored.status, stored.amount, paid.amount) == (PayoutRequestStatus.OPEN, 1000, 2000)
        assert pw.balance() == Balance(available=1000, paid=2000)


@pytest.mark.parametrize("payout", ["mark_paid", "batch"])
def test_a_request_made_after_a_payout_began_for_the_same_money_does_not_run_the_payout_again(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, payout: str
) -> None:
    """The rule above makes a payout run again only when the request counted other money: a
    retry re-runs a whole batch, and one for every request made meanwhile had made batches of
    600 ready affiliates run out of retries under steady requests (probe P2). Here the request
    comes a second after the payout began, but nothing became available in between: the payout
    reads the funds once, pays the 2,000 and closes the request for 2,000 as paid."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    principal, _ = affiliate_key(pw.rt, pw.world.affiliate)
    pw.earn(10_000)
    pw.past_hold()
    reads: list[str] = []
    real_funds_of = payouts.funds_of

    def counted_funds_of(tx: Tx, program_affiliate_id: str) -> Any:
        reads.append(program_affiliate_id)
        return real_funds_of(tx, program_affiliate_id)

    monkeypatch.setattr(payouts, "funds_of", counted_funds_of)

    def later_request() -> Any:
        clock.advance(timedelta(seconds=1))
        try:
            return pw.request(principal)
        except StateConflict as nothing_available:
            return nothing_available

    paid, request = paid_while_held_before_its_lock(pw, monkeypatch, payout, later_request)
    assert reads == [pw.world.affiliate.id]  # one read of the funds: no second run
    stored = runtime.read(lambda tx: tx.uow.payout_requests.find_all({}))
    if stored:  # the request came first (PostgreSQL), and the payout closed it
        assert [(r.id, r.status, r.payout_execution_id, r.amount) for r in stored] == [
            (request.id, PayoutRequestStatus.PAID, paid.id, 2000)
        ]
    else:  # it waited for the payout and found nothing available
        assert isinstance(request, StateConflict)
    assert paid.amount == 2000
    assert pw.balance() == Balance(paid=2000)


def test_a_batch_that_waited_for_another_batchs_lock_plans_no_second_payout_for_the_affiliate(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One payout in flight per affiliate, looked at again under the affiliate's lock. Here a
    batch is held after its read of the funds (holding the affiliate's row lock) while money
    arrives and a second batch starts: the second saw no payout in flight before the lock, and
    had planned a payout of the new money once the first committed, refused at insert by the
    one-in-flight key and run again; a report completing the first payout meanwhile deadlocked
    with it on PostgreSQL (a probe on three processes logged 1,341 deadlocks). It must find the
    first batch's payout under the lock and plan nothing."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    pw.earn(10_000)
    pw.past_hold()
    planned: list[str] = []
    real_create_execution = payouts.create_execution

    def counted_create_execution(tx: Tx, program: Any, affiliate: Any, *args: Any, **kwargs: Any) -> Any:
        planned.append(affiliate.id)
        return real_create_execution(tx, program, affiliate, *args, **kwargs)

    monkeypatch.setattr(payouts, "create_execution", counted_create_execution)

    def earn_then_batch() -> Any:
        pw.earn(5_000)
        try:
            return pw.prepare()
        except StateConflict as refused:
            return refused

    first, second = held_after_its_read(monkeypatch, payouts, "funds_of", pw.prepare, earn_then_batch)
    assert isinstance(second, StateConflict)
    assert planned == [pw.world.affiliate.id]
    [execution] = pw.dispatch(first.id).executions
    assert execution.amount == 2000
    pw.report(execution.id, "succeeded", "k1")
    assert [e.amount for e in pw.dispatch(pw.prepare().id).executions] == [1000]


#: Enough that the payout moves several entries before the refunded payment's.
PAYMENTS_IN_THE_PAYOUT = 8


@pytest.mark.parametrize("payout", ["mark_paid", "failed_report"])
def test_a_payout_and_a_refund_of_one_of_its_payments_finish_without_a_deadlock(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, payout: str
) -> None:
    """LedgerReads.lock_for_payout: a refund holds its payment's row lock from its start and
    takes the balance rows at its commit; a payout freezing (mark-paid) or releasing (a failed
    report) several entries took the rows for the entries before the refunded payment's, then
    waited for that payment, and PostgreSQL broke the cycle after a second by failing one of
    them, which ran again (a probe logged 18 deadlocks). Here the refund is held after its lock
    while the payout starts: each must run exactly once, and the money must add up."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    payments = []
    for _ in range(PAYMENTS_IN_THE_PAYOUT):
        payments.append(pw.earn(10_000))
        clock.advance(timedelta(seconds=1))  # entries in the order of their payments
    pw.past_hold()
    refunded = payments[len(payments) // 2]
    dispatched = pw.dispatch(pw.prepare().id).executions[0] if payout == "failed_report" else None
    refund_locked, refund_may_go_on = threading.Event(), threading.Event()
    calls = {"refund": 0, "payout": 0}
    real_rebalance, real_funds_of, real_fail = revenue.rebalance, payouts.funds_of, payout_executions.fail

    def held_rebalance(*args: Any, **kwargs: Any) -> Any:
        calls["refund"] += 1
        refund_locked.set()
        assert refund_may_go_on.wait(10)
        return real_rebalance(*args, **kwargs)

    def counted_funds_of(tx: Tx, program_affiliate_id: str) -> Any:
        calls["payout"] += 1
        return real_funds_of(tx, program_affiliate_id)

    def counted_fail(*args: Any, **kwargs: Any) -> Any:
        calls["payout"] += 1
        return real_fail(*args, **kwargs)

    def pay() -> Any:
        if dispatched is None:
            return pw.mark_paid()
        return pw.report(dispatched.id, "failed", "k-failed")

    monkeypatch.setattr(revenue, "rebalance", held_rebalance)
    monkeypatch.setattr(payouts, "funds_of", counted_funds_of)
    monkeypatch.setattr(payout_executions, "fail", counted_fail)
    with ThreadPoolExecutor(max_workers=2) as pool:
        refunding = pool.submit(pw.world.refund, refunded, 5000)
        assert refund_locked.wait(10)
        paying = pool.submit(pay)
        with contextlib.suppress(TimeoutError):
            paying.result(timeout=0.5)
        refund_may_go_on.set()
        refunding.result(timeout=30)
        paid = paying.result(timeout=30)

    assert calls == {"refund": 1, "payout": 1}
    owed = 2000 * PAYMENTS_IN_THE_PAYOUT - 1000
    assert sum(entry.amount for entry in pw.world.entries()) == owed
    balance = pw.balance()
    assert balance.paid + balance.available == owed
    # Mark-paid pays what it read: the reversal too where it waited for the refund's commit.
    assert balance.paid == (0 if dispatched else paid.amount)


def test_ready_payout_pages_skip_affiliates_that_are_not_ready_and_join_up_on_every_store(
    runtime: Runtime, clock: ManualClock
) -> None:
    """docs/payouts.md, ready payouts: a page reads balances only until it is full, so paging
    with ``starting_after`` must give exactly the full list, newest affiliate first, with
    ``has_more`` on every page but the last, whatever lies between the ready affiliates (nothing
    earned, less than the minimum, everything just paid) and whether a row is an available
    balance or a dispatched payout still waiting for its report."""
    pw = build_payout_world(runtime, clock, hold_days=0, minimum_payout=1500)
    world = pw.world
    made = [world.add_affiliate(f"ally{n}@example.com") for n in range(9)]
    for n, affiliate in enumerate(made):
        if n % 3 == 0 or n == 4:
            pw.earn(10_000, affiliate)  # 2000: ready
        if n % 3 == 1:
            pw.earn(5_000, affiliate)  # 1000: less than the minimum, unless it earned more
    pw.earn(10_000)
    pw.past_hold()
    executions = pw.dispatch(pw.prepare().id).executions
    amounts = {e.program_affiliate_id: e.amount for e in executions}
    assert amounts == {made[n].id: a for n, a in ((0, 2000), (3, 2000), (4, 3000), (6, 2000))} | {
        world.affiliate.id: 2000
    }
    for execution in executions:
        if execution.program_affiliate_id != made[4].id:  # made[4]'s stays dispatched, unreported
            pw.report(execution.id, "succeeded", f"k-{execution.id}")
    for n in (0, 3, 6):
        pw.earn(10_000, made[n])
    pw.past_hold()

    full = pw.ready()
    expected = sorted((made[n].id for n in (0, 3, 4, 6)), reverse=True)
    assert [row.affiliate.id for row in full] == expected
    assert {row.affiliate.id: row.amount for row in full} == {
        made[0].id: 2000,
        made[3].id: 2000,
        made[4].id: 3000,
        made[6].id: 2000,
    }
    for size in (1, 2, 3, 4):
        pages, cursor = [], None
        for _ in range(len(expected) + 1):  # bounded: a cursor that repeats a row must fail, not hang
            page = payouts.list_ready_payouts(
                runtime, world.session, world.program.id, limit=size, starting_after=cursor
            )
            pages.append(page)
            if not page.has_more:
                break
            cursor = page.data[-1].affiliate.id
        assert [row.affiliate.id for p in pages for row in p.data] == expected
        assert all(len(p.data) == size for p in pages[:-1]) and 0 < len(pages[-1].data) <= size
    last_listed = payouts.list_ready_payouts(
        runtime, world.session, world.program.id, limit=25, starting_after=expected[-1]
    )
    assert (last_listed.data, last_listed.has_more) == ([], False)


def test_ready_payouts_of_more_affiliates_than_one_lookup_reads_carry_their_own_details_and_payout(
    runtime: Runtime, clock: ManualClock
) -> None:
    """A page's payouts in flight and payout details are read several affiliates a statement
    (``payouts._LOOKED_UP_TOGETHER``): across more affiliates than one statement reads, in the
    list and the CSV, each row carries its own affiliate's details and dispatched payout, and an
    affiliate without details has none."""
    pw = build_payout_world(runtime, clock, hold_days=0, minimum_payout=1000)
    world = pw.world
    made = [world.add_affiliate(f"ally{n}@example.com") for n in range(2 * payouts._LOOKED_UP_TOGETHER + 5)]
    for n, affiliate in enumerate(made[:10]):
        pw.earn(5_000 + 100 * n, affiliate)
    pw.past_hold()
    dispatched = {e.program_affiliate_id: e for e in pw.dispatch(pw.prepare().id).executions}
    for n, affiliate in enumerate(made):
        if n >= 10:
            pw.earn(5_000 + 100 * n, affiliate)
        if n % 3 == 0:
            principal, _secret = affiliate_key(runtime, affiliate)
            details = {"method": "paypal", "email": f"pay{n}@example.com"}
            payout_accounts.save_payout_details(runtime, principal, world.program.id, details)
    pw.past_hold()

    expected = {
        affiliate.id: (
            1_000 + 20 * n,
            f"pay{n}@example.com" if n % 3 == 0 else None,
            dispatched[affiliate.id].id if n < 10 else None,
        )
        for n, affiliate in enumerate(made)
    }
    listed = {
        row.affiliate.id: (
            row.amount,
            row.details.email if row.details else None,
            row.execution.id if row.execution else None,
        )
        for row in pw.ready()
    }
    assert listed == expected
    csv_rows = list(
        csv.DictReader(io.StringIO(payouts.ready_payouts_csv(runtime, world.session, world.program.id)))
    )
    assert {
        row["program_affiliate_id"]: (int(row["amount"]), row["payout_email"] or None) for row in csv_rows
    } == {affiliate_id: (amount, email) for affiliate_id, (amount, email, _) in expected.items()}
