"""Payouts through the services on the memory store: balances, batches, reports, mark-paid.

Each test names the rule it checks (decisions 5, interface 3.2 and 6.5). The program pays 20 %,
so a payment of 10 000 earns 2 000; ``hold_days`` is 30 unless a test says otherwise.
"""

from __future__ import annotations

import pytest

from refcore.errors import RefcoreError
from refcore.models import DisputeStatus, EventType, KeyKind, Mode
from refcore.models.payout import PayoutBatchStatus, PayoutExecutionStatus
from refcore.rules.entry_status import Balance
from refcore.services import payout_executions, payouts
from tests.payouts.world import PayoutWorld, affiliate_key

LIVE = Mode.LIVE


def _code(call: object) -> str:
    assert callable(call)
    with pytest.raises(RefcoreError) as caught:
        call()
    return caught.value.code


# -- balances --------------------------------------------------------------------------------


def test_commission_is_pending_during_the_hold_then_available(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    assert pw.balance() == Balance(pending=2000)
    pw.past_hold()
    assert pw.balance() == Balance(available=2000)


def test_entries_in_a_prepared_batch_are_processing_not_available(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    pw.past_hold()
    pw.prepare()
    assert pw.balance() == Balance(processing=2000)
    statuses = {e["status"] for e in pw.world.commissions().data}
    assert statuses == {"processing"}


def test_test_mode_commission_never_reaches_a_payout(pw: PayoutWorld) -> None:
    customer = pw.world.referred_customer(Mode.TEST)
    pw.world.pay(customer, 10_000, mode=Mode.TEST)
    pw.past_hold()
    assert pw.balance() == Balance()
    assert pw.ready() == []


# -- ready payouts ---------------------------------------------------------------------------


def test_ready_payouts_respect_the_program_minimum(pw: PayoutWorld) -> None:
    pw.world.update_program(minimum_payout=3000)
    pw.earn(10_000)
    pw.past_hold()
    assert pw.ready() == []
    pw.earn(10_000)
    pw.past_hold()
    [ready] = pw.ready()
    assert (ready.affiliate.id, ready.amount, ready.execution) == (pw.world.affiliate.id, 4000, None)


def test_an_entry_held_by_an_open_dispute_is_never_paid(pw: PayoutWorld) -> None:
    held = pw.earn(10_000)
    pw.earn(5_000)
    pw.world.dispute("dp_1", held, DisputeStatus.OPENED, 10_000)
    pw.past_hold()
    assert pw.balance() == Balance(held=2000, available=1000)
    execution = pw.mark_paid()
    assert execution.amount == 1000
    assert pw.balance() == Balance(held=2000, paid=1000)
    pw.world.dispute("dp_1", held, DisputeStatus.WON, 10_000)
    assert pw.balance() == Balance(available=2000, paid=1000)


def test_a_negative_net_carries_forward_and_is_netted_by_the_next_payout(pw: PayoutWorld) -> None:
    first = pw.earn(10_000)
    pw.past_hold()
    pw.mark_paid()
    pw.world.refund(first, 10_000)  # reversal of 2 000 after the earning was paid
    assert pw.balance() == Balance(available=-2000, paid=2000)
    assert pw.ready() == []
    assert _code(pw.mark_paid) == "state_conflict"
    pw.earn(15_000)  # earns 3 000
    pw.past_hold()
    execution = pw.mark_paid()
    assert execution.amount == 1000
    assert pw.balance() == Balance(available=0, paid=3000)


# -- batches ---------------------------------------------------------------------------------


def test_a_batch_freezes_one_execution_per_ready_affiliate(pw: PayoutWorld) -> None:
    other = pw.world.add_affiliate()
    pw.earn(10_000)
    pw.earn(20_000, affiliate=other)
    pw.past_hold()
    batch = pw.prepare()
    assert (batch.status, batch.total, batch.execution_count) == (PayoutBatchStatus.PREPARED, 6000, 2)
    view = payouts.get_batch(pw.rt, pw.world.session, batch.id)
    assert sorted(e.amount for e in view.executions) == [2000, 4000]
    assert {e.status for e in view.executions} == {PayoutExecutionStatus.PREPARED}
    assert pw.events(EventType.PAYOUT_READY) == []


def test_a_batch_with_nothing_ready_is_a_state_conflict(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    assert _code(pw.prepare) == "state_conflict"


def test_a_second_batch_skips_an_affiliate_whose_payout_is_in_flight(pw: PayoutWorld) -> None:
    other = pw.world.add_affiliate()
    pw.earn(10_000)
    pw.past_hold()
    pw.prepare()
    pw.earn(10_000)
    pw.earn(10_000, affiliate=other)
    pw.past_hold()
    second = pw.prepare()
    view = payouts.get_batch(pw.rt, pw.world.session, second.id)
    assert [e.program_affiliate_id for e in view.executions] == [other.id]


def test_dispatch_makes_executions_ready_with_one_payout_ready_event_each(pw: PayoutWorld) -> None:
    other = pw.world.add_affiliate()
    pw.earn(10_000)
    pw.earn(10_000, affiliate=other)
    pw.past_hold()
    batch = pw.prepare()
    view = pw.dispatch(batch.id)
    assert view.batch.status is PayoutBatchStatus.DISPATCHED
    assert {e.status for e in view.executions} == {PayoutExecutionStatus.READY}
    events = pw.events(EventType.PAYOUT_READY)
    assert sorted(e.data["id"] for e in events) == sorted(e.id for e in view.executions)
    assert all(e.livemode for e in events)
    assert all("instructions" not in e.data and "email" not in e.data for e in events)


def test_dispatching_a_batch_twice_is_a_state_conflict(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    pw.past_hold()
    batch = pw.prepare()
    pw.dispatch(batch.id)
    assert _code(lambda: pw.dispatch(batch.id)) == "state_conflict"
    assert len(pw.events(EventType.PAYOUT_READY)) == 1


# -- external reports ------------------------------------------------------------------------


def _dispatched(pw: PayoutWorld, *amounts: int) -> str:
    for amount in amounts:
        pw.earn(amount)
    pw.past_hold()
    batch = pw.prepare()
    [execution] = pw.dispatch(batch.id).executions
    return execution.id


def test_success_marks_every_entry_paid_once_even_when_reported_twice(pw: PayoutWorld) -> None:
    execution_id = _dispatched(pw, 10_000, 5_000)
    first = pw.report(execution_id, "succeeded", "idem-1")
    again = pw.report(execution_id, "succeeded", "idem-1")
    assert (first.replay, again.replay) == (False, True)
    assert again.execution == first.execution
    assert first.execution.status is PayoutExecutionStatus.SUCCEEDED
    assert len(pw.events(EventType.COMMISSION_PAID)) == 2
    [succeeded] = pw.events(EventType.PAYOUT_SUCCEEDED)
    assert succeeded.data["id"] == execution_id and succeeded.livemode
    assert pw.balance() == Balance(paid=3000)
    assert {e["status"] for e in pw.world.commissions().data} == {"paid"}


def test_a_different_outcome_or_key_for_a_finished_execution_is_a_state_conflict(pw: PayoutWorld) -> None:
    execution_id = _dispatched(pw, 10_000)
    pw.report(execution_id, "succeeded", "idem-1")
    assert _code(lambda: pw.report(execution_id, "failed", "idem-1")) == "state_conflict"
    assert _code(lambda: pw.report(execution_id, "succeeded", "idem-2")) == "state_conflict"
    assert pw.balance() == Balance(paid=2000)


def test_failure_releases_the_entries_for_a_later_payout(pw: PayoutWorld) -> None:
    execution_id = _dispatched(pw, 10_000)
    reported = pw.report(execution_id, "failed", "idem-1")
    assert reported.execution.status is PayoutExecutionStatus.FAILED
    [failed] = pw.events(EventType.PAYOUT_FAILED)
    assert failed.data["id"] == execution_id
    assert pw.events(EventType.COMMISSION_PAID) == []
    assert pw.balance() == Balance(available=2000)
    assert pw.report(execution_id, "failed", "idem-1").replay
    second = pw.prepare()
    assert second.total == 2000


def test_a_report_before_dispatch_is_a_state_conflict(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    pw.past_hold()
    batch = pw.prepare()
    [execution] = payouts.get_batch(pw.rt, pw.world.session, batch.id).executions
    assert _code(lambda: pw.report(execution.id, "succeeded", "k")) == "state_conflict"


@pytest.mark.parametrize("key", [None, "", "  ", "x" * 256])
def test_a_report_needs_an_idempotency_key(pw: PayoutWorld, key: object) -> None:
    execution_id = _dispatched(pw, 10_000)
    with pytest.raises(RefcoreError) as caught:
        payout_executions.report_outcome(
            pw.rt, pw.live_key, execution_id, PayoutExecutionStatus.SUCCEEDED, idempotency_key=key
        )
    assert (caught.value.code, caught.value.param) == ("validation_error", "Idempotency-Key")


def test_instructions_go_to_a_live_key_of_the_exact_app_only(pw: PayoutWorld, rt: object) -> None:
    execution_id = _dispatched(pw, 10_000)
    instructions = payout_executions.get_instructions(pw.rt, pw.live_key, execution_id)
    assert instructions["id"] == execution_id
    assert instructions["instructions"]["email"] == pw.world.affiliate.email
    assert instructions["instructions"]["amount"] == 2000
    test_key = pw.world.key(Mode.TEST, KeyKind.APP)
    for principal in (test_key, pw.world.session):
        with pytest.raises(RefcoreError) as caught:
            payout_executions.get_instructions(pw.rt, principal, execution_id)
        assert caught.value.code == "live_key_required"
    aff_key, _ = affiliate_key(pw.rt, pw.world.affiliate)
    from tests.contract.scenario import build_world

    stranger = build_world(pw.rt, pw.world.clock)
    for principal in (aff_key, stranger.key(LIVE), stranger.session):
        with pytest.raises(RefcoreError) as caught:
            payout_executions.get_instructions(pw.rt, principal, execution_id)
        assert caught.value.code == "payout_execution_not_found"
        with pytest.raises(RefcoreError) as caught:
            pw.report(execution_id, "succeeded", "k", principal=principal)
        assert caught.value.code == "payout_execution_not_found"


# -- mark-paid -------------------------------------------------------------------------------


def test_mark_paid_completes_the_affiliates_ready_execution(pw: PayoutWorld) -> None:
    execution_id = _dispatched(pw, 10_000)
    [ready] = pw.ready()
    assert ready.execution is not None and ready.execution.id == execution_id
    execution = pw.mark_paid()
    assert (execution.id, execution.status, execution.completed_manually) == (
        execution_id,
        PayoutExecutionStatus.SUCCEEDED,
        True,
    )
    [succeeded] = pw.events(EventType.PAYOUT_SUCCEEDED)
    assert succeeded.data["id"] == execution_id
    assert _code(lambda: pw.report(execution_id, "succeeded", "late")) == "state_conflict"
    assert pw.balance() == Balance(paid=2000)


def test_mark_paid_without_a_batch_records_a_completed_execution(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    pw.past_hold()
    execution = pw.mark_paid()
    assert (execution.batch_id, execution.status, execution.amount) == (
        None,
        PayoutExecutionStatus.SUCCEEDED,
        2000,
    )
    assert [e.data["id"] for e in pw.events(EventType.PAYOUT_SUCCEEDED)] == [execution.id]
    assert len(pw.events(EventType.COMMISSION_PAID)) == 1
    assert _code(pw.mark_paid) == "state_conflict"


def test_mark_paid_refuses_an_affiliate_whose_payout_waits_in_a_prepared_batch(pw: PayoutWorld) -> None:
    """One payout in flight per affiliate: mark-paid had paid the money earned after the batch
    as a second payout beside the prepared one. Once the batch is dispatched, it completes that
    payout, as it completes any ready one."""
    pw.earn(10_000)
    pw.past_hold()
    batch = pw.prepare()
    pw.earn(5_000)
    pw.past_hold()
    assert _code(pw.mark_paid) == "state_conflict"
    assert pw.events(EventType.PAYOUT_SUCCEEDED) == []
    # Nor is it listed as ready (in the CSV either): it had shown the 1,000 earned since, a
    # payout no one could then record, and the 2,000 frozen in the batch nowhere.
    assert pw.ready() == []
    assert payouts.ready_payouts_csv(pw.rt, pw.world.session, pw.world.program.id).count("\n") == 1
    [execution] = pw.dispatch(batch.id).executions
    [ready] = pw.ready()
    assert (ready.amount, ready.execution) == (2000, execution)
    assert pw.mark_paid().id == execution.id
    assert pw.balance().paid == 2000  # the batch's payout; the 1,000 earned after waits for the next


def test_mark_paid_needs_a_session_or_a_live_app_key(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    pw.past_hold()
    test_key = pw.world.key(Mode.TEST, KeyKind.APP)
    with pytest.raises(RefcoreError) as caught:
        payouts.mark_paid(pw.rt, test_key, pw.world.affiliate.id)
    assert caught.value.code == "live_key_required"
    aff_key, _ = affiliate_key(pw.rt, pw.world.affiliate)
    with pytest.raises(RefcoreError) as caught:
        payouts.mark_paid(pw.rt, aff_key, pw.world.affiliate.id)
    assert caught.value.code == "forbidden"
    assert payouts.mark_paid(pw.rt, pw.live_key, pw.world.affiliate.id).amount == 2000


# -- CSV -------------------------------------------------------------------------------------


def test_the_csv_lists_ready_payouts_with_formula_cells_neutralised(pw: PayoutWorld) -> None:
    import csv
    import io

    evil = pw.world.add_affiliate(email="evil@example.com", name='=HYPERLINK("http://x","y")')
    pw.earn(10_000, affiliate=evil)
    pw.earn(10_000)
    pw.past_hold()
    text = payouts.ready_payouts_csv(pw.rt, pw.world.session, pw.world.program.id)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:5] == ["program_affiliate_id", "email", "name", "amount", "currency"]
    by_id = {r[0]: r for r in rows[1:]}
    assert by_id[evil.id][2] == '\'=HYPERLINK("http://x","y")'
    assert by_id[pw.world.affiliate.id][1:5] == ["partner@example.com", "Pat Partner", "2000", "usd"]
    assert len(rows) == 3
