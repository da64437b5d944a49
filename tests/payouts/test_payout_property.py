"""A Hypothesis state machine over random ledgers with payouts interleaved (memory store).

Payments, refunds, dispute reports, the clock, batches, dispatches, cancellations of prepared
batches, external reports and mark-paid run in any order. After every step, per affiliate:

- what was ever paid (the sum of succeeded executions) plus the current balance
  (pending + held + available + processing) equals the sum of all its Live entries;
- ``paid`` in the balance is exactly the sum of succeeded executions;
- no entry is in two live-or-paid payouts, and every execution's amount is its items' sum;

and at each payout:

- nothing held, pending or already taken is put in a payout (only ``approved`` entries);
- a payout never pays a non-positive amount, and the affiliate's available balance right after
  a payout that took it is exactly 0 (negative nets carry forward, never paid).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from refcore.clocks import ManualClock
from refcore.errors import RefcoreError
from refcore.models import DisputeStatus, Mode, ProgramAffiliate
from refcore.models.payout import PayoutBatchStatus, PayoutExecution, PayoutExecutionStatus
from refcore.services import commissions, payout_executions, payouts
from refcore.services.runtime import Tx
from refcore_memstore import memory_runtime
from tests.contract.scenario import build_world

LIVE = Mode.LIVE
_DISPUTE_STATUSES = [s.value for s in DisputeStatus]


class PayoutLedger(RuleBasedStateMachine):
    @initialize(minimum=st.sampled_from([0, 0, 500, 3000]), hold_days=st.sampled_from([0, 10, 30]))
    def set_up(self, minimum: int, hold_days: int) -> None:
        self.clock = ManualClock()
        self.rt = memory_runtime(clock=self.clock)
        self.world = build_world(self.rt, self.clock, minimum_payout=minimum, hold_days=hold_days)
        second = self.world.add_affiliate(name="Second")
        self.affiliates: list[ProgramAffiliate] = [self.world.affiliate, second]
        self.links = [self.world.link, self.world.add_link(second)]
        self.payments: list[tuple[str, int]] = []
        self.disputes: list[tuple[str, str, int]] = []
        self.keys = 0

    # -- helpers -----------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        def work(tx: Tx) -> dict[str, Any]:
            return {
                "entries": tx.uow.commission_entries.find_all({"mode": LIVE}),
                "executions": tx.uow.payout_executions.find_all({}),
                "items": tx.uow.payout_items.find_all({}),
            }

        return self.rt.read(work)

    def _entry_statuses(self) -> dict[str, str]:
        """Every Live entry's derived status, read through the public commission list."""
        statuses: dict[str, str] = {}
        cursor: str | None = None
        while True:
            page = self.world.commissions(limit=100, starting_after=cursor)
            statuses.update({e["id"]: e["status"] for e in page.data})
            if not page.has_more:
                return statuses
            cursor = page.data[-1]["id"]

    def _balance(self, affiliate: ProgramAffiliate) -> Any:
        return commissions.payout_balance(self.rt, self.world.session, affiliate.id)

    def _check_new_executions(self, before: set[str], statuses: dict[str, str]) -> list[PayoutExecution]:
        """Payouts created by the last step took only approved entries and all that was available."""
        state = self._state()
        new = [x for x in state["executions"] if x.id not in before]
        for execution in new:
            event(f"payout {execution.status.value}")
            items = [i for i in state["items"] if i.execution_id == execution.id]
            assert execution.amount > 0
            assert all(statuses[i.entry_id] == "approved" for i in items), "only approved entries are paid"
            affiliate = next(a for a in self.affiliates if a.id == execution.program_affiliate_id)
            assert self._balance(affiliate).available == 0, "a payout takes all that is available"
        return new

    # -- ledger ------------------------------------------------------------------------------

    @rule(who=st.integers(0, 1), amount=st.integers(0, 20_000))
    def pay(self, who: int, amount: int) -> None:
        customer = self.world.referred_customer(LIVE, link=self.links[who])
        payment = self.world.pay(customer, amount).record
        self.payments.append((payment.payment_id, amount))  # type: ignore[union-attr]

    @precondition(lambda self: self.payments)
    @rule(data=st.data())
    def refund(self, data: st.DataObject) -> None:
        payment_id, amount = data.draw(st.sampled_from(self.payments))
        if amount == 0:
            return
        try:
            self.world.refund(payment_id, data.draw(st.integers(1, amount)))
        except RefcoreError as error:
            assert error.code == "amount_exceeds_payment"

    @precondition(lambda self: self.payments)
    @rule(data=st.data())
    def open_dispute(self, data: st.DataObject) -> None:
        payment_id, amount = data.draw(st.sampled_from(self.payments))
        if amount == 0:
            return
        dispute_id = f"dp_{len(self.disputes)}"
        disputed = data.draw(st.integers(1, amount))
        status = data.draw(st.sampled_from(["opened", "opened", "lost"]))
        try:
            self.world.dispute(dispute_id, payment_id, status, disputed)
        except RefcoreError as error:
            assert error.code == "amount_exceeds_payment"
            return
        self.disputes.append((dispute_id, payment_id, disputed))

    @precondition(lambda self: self.disputes)
    @rule(data=st.data(), status=st.sampled_from(_DISPUTE_STATUSES))
    def move_dispute(self, data: st.DataObject, status: str) -> None:
        dispute_id, payment_id, amount = data.draw(st.sampled_from(self.disputes))
        try:
            self.world.dispute(dispute_id, payment_id, status, amount)
        except RefcoreError as error:
            assert error.code in ("dispute_conflict", "amount_exceeds_payment")

    @rule(days=st.sampled_from([1, 5, 15, 31, 31, 31]))
    def advance(self, days: int) -> None:
        self.world.advance(days)

    # -- payouts -----------------------------------------------------------------------------

    @rule()
    def prepare_batch(self) -> None:
        before = {x.id for x in self._state()["executions"]}
        statuses = self._entry_statuses()
        try:
            payouts.prepare_batch(self.rt, self.world.session, self.world.program.id)
        except RefcoreError as error:
            assert error.code == "state_conflict"
        self._check_new_executions(before, statuses)

    @rule(outcome=st.sampled_from(["succeeded", "failed"]))
    def batch_dispatch_report(self, outcome: str) -> None:
        """The whole external flow in one step, so that long runs reach reports often."""
        self.prepare_batch()
        self.dispatch()
        self.report(outcome, replay=False)

    def _prepared_batches(self) -> list[str]:
        program_id = self.world.program.id
        listed = payouts.list_batches(self.rt, self.world.session, program_id=program_id, limit=100)
        return [batch.id for batch in listed.data if batch.status is PayoutBatchStatus.PREPARED]

    @rule()
    def dispatch(self) -> None:
        for batch_id in self._prepared_batches():
            payouts.dispatch_batch(self.rt, self.world.session, batch_id)

    @rule()
    def cancel(self) -> None:
        for batch_id in self._prepared_batches():
            event("canceled a batch")
            payouts.cancel_batch(self.rt, self.world.session, batch_id)

    @rule(outcome=st.sampled_from(["succeeded", "failed"]), replay=st.booleans())
    def report(self, outcome: str, replay: bool) -> None:
        ready = [x for x in self._state()["executions"] if x.status is PayoutExecutionStatus.READY]
        if not ready:
            return
        self.keys += 1
        key = f"k{self.keys}"
        event(f"reported {outcome}")
        for _ in range(2 if replay else 1):
            payout_executions.report_outcome(
                self.rt,
                self.world.key(LIVE),
                ready[0].id,
                PayoutExecutionStatus(outcome),
                idempotency_key=key,
            )

    @rule(who=st.integers(0, 1))
    def mark_paid(self, who: int) -> None:
        before = {x.id for x in self._state()["executions"]}
        statuses = self._entry_statuses()
        try:
            payouts.mark_paid(self.rt, self.world.session, self.affiliates[who].id)
        except RefcoreError as error:
            assert error.code == "state_conflict"
        self._check_new_executions(before, statuses)

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def money_is_conserved_per_affiliate(self) -> None:
        state = self._state()
        for affiliate in self.affiliates:
            entries = [e for e in state["entries"] if e.program_affiliate_id == affiliate.id]
            ever_paid = sum(
                x.amount
                for x in state["executions"]
                if x.program_affiliate_id == affiliate.id and x.status is PayoutExecutionStatus.SUCCEEDED
            )
            b = self._balance(affiliate)
            assert b.paid == ever_paid
            current = b.pending + b.held + b.available + b.processing
            assert ever_paid + current == sum(e.amount for e in entries)

    @invariant()
    def no_entry_is_in_two_payouts(self) -> None:
        state = self._state()
        statuses = {x.id: x.status for x in state["executions"]}
        active = Counter(i.active_entry_id for i in state["items"] if i.active_entry_id is not None)
        assert all(n == 1 for n in active.values())
        released = (PayoutExecutionStatus.FAILED, PayoutExecutionStatus.CANCELED)
        for item in state["items"]:
            assert (item.active_entry_id is None) == (statuses[item.execution_id] in released)
        for execution in state["executions"]:
            items = [i for i in state["items"] if i.execution_id == execution.id]
            assert execution.amount == sum(i.amount for i in items) > 0


TestPayoutLedger = PayoutLedger.TestCase
