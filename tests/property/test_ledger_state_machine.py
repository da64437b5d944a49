"""The revenue ledger as a Hypothesis state machine (issue 2).

Random sequences of payments (zero amounts included), refunds and dispute reports (all five
statuses, out of order, replayed exactly, replayed with a conflicting payload, over the payment's
limit, with invalid amounts), with Test and Live keys mixed and the clock moving, are applied
through the services. An independent model (plain dicts, its own copy of the dispute table and of
the formula) predicts the outcome of every call, and after every step the machine checks:

- each payment's entries sum to ``C - floor(C * (refunded + lost) / A)`` and stay within [0, C];
- refunded + opened + lost never exceed ``A`` (in the model, the payment row and the tables);
- a replay or a rejected operation changes nothing and emits nothing (a snapshot of every table,
  events included, is equal before and after);
- an accepted operation appends at most the one predicted entry, and existing entries never change;
- balances (``services.commissions.payout_balance``) equal the sums of entries by derived status;
- each created record (payment, refund, entry, referral, affiliate) has exactly one event.

The machine is store-agnostic: a subclass that overrides :meth:`LedgerMachine.open_store` runs
the same sequences on another store (see ``tests/stores.py``).
"""

from __future__ import annotations

from collections import Counter
from contextlib import AbstractContextManager, ExitStack
from datetime import datetime, timedelta
from typing import Any

from attrs import define, field
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from refcore.clocks import ManualClock
from refcore.errors import RefcoreError
from refcore.models import CommissionEntry, EntryKind, EventType, Mode, RevenueSource
from refcore.services import commissions
from refcore.services.revenue import Recorded
from refcore.services.runtime import Runtime
from tests.contract.scenario import REPOSITORIES, World, build_world, snapshot
from tests.stores import memory_store

INT32_MAX = 2**31 - 1
CURRENCY = "usd"
MODES = (Mode.TEST, Mode.LIVE)
PAYMENT_IDS = ("pay_a", "pay_b", "pay_c", "pay_d")
REFUND_IDS = ("re_a", "re_b", "re_c")
DISPUTE_IDS = ("dp_a", "dp_b", "dp_c")
STATUSES = ("opened", "won", "withdrawn", "lost", "funds_reinstated")

#: Values no amount may take: refused with ``validation_error`` before anything is read.
BAD_AMOUNTS = (-1, INT32_MAX + 1, True, False, 100.0, "100", None)

commission_terms = st.one_of(
    st.builds(lambda bps: {"type": "percent", "bps": bps}, st.sampled_from((0, 1, 2_000, 3_333, 10_000))),
    st.builds(lambda bps: {"type": "percent", "bps": bps}, st.integers(0, 10_000)),
    st.builds(lambda amount: {"type": "fixed", "amount": amount}, st.integers(0, 5_000)),
)


EVENT_OF_KIND = {
    EntryKind.EARNED: EventType.COMMISSION_CREATED,
    EntryKind.REINSTATEMENT: EventType.COMMISSION_CREATED,
    EntryKind.REVERSAL: EventType.COMMISSION_REVERSED,
}


# -- the independent model ---------------------------------------------------------------------

#: Interface 3.1 and decisions 11, written out again: moves forward, and statuses already passed.
FORWARD = {("opened", "won"), ("opened", "withdrawn"), ("opened", "lost"), ("lost", "funds_reinstated")}
PASSED = {
    "opened": set(),
    "won": {"opened"},
    "withdrawn": {"opened"},
    "lost": {"opened"},
    "funds_reinstated": {"opened", "lost"},
}


def valid_amount(value: object, *, positive: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return (1 if positive else 0) <= value <= INT32_MAX


def model_commission(terms: dict[str, Any], amount: int) -> int:
    if amount == 0:
        return 0
    if terms["type"] == "percent":
        return amount * terms["bps"] // 10_000
    return min(terms["amount"], amount)


@define
class PaymentModel:
    txn_id: str
    customer_id: str
    amount: int
    commission: int
    affiliate_id: str | None
    available_at: datetime
    refunded: int = 0
    opened: int = 0
    lost: int = 0
    open_count: int = 0
    #: The sum of the payment's negative entries (reversals), which no dispute holds.
    reversed: int = 0

    @property
    def consumed(self) -> int:
        return self.refunded + self.opened + self.lost

    @property
    def target(self) -> int:
        if self.amount == 0 or self.commission == 0:
            return 0
        return self.commission - self.commission * (self.refunded + self.lost) // self.amount

    def move_dispute(self, before: str | None, after: str, amount: int) -> None:
        for status, sign in ((before, -1), (after, 1)):
            if status == "opened":
                self.opened += sign * amount
                self.open_count += sign
            elif status == "lost":
                self.lost += sign * amount


@define
class CustomerModel:
    id: str
    mode: Mode
    affiliate_id: str | None  # None when the referral is not attributed


@define
class Model:
    terms: dict[str, Any]
    hold_days: int
    customers: list[CustomerModel] = field(factory=list)
    payments: dict[tuple[Mode, str], PaymentModel] = field(factory=dict)
    refunds: dict[tuple[Mode, str], tuple[str, int]] = field(factory=dict)
    disputes: dict[tuple[Mode, str], list[Any]] = field(factory=dict)  # [payment_id, amount, status]


# -- the machine -------------------------------------------------------------------------------


class LedgerMachine(RuleBasedStateMachine):
    """Payments, refunds and disputes against a store, checked against :class:`Model`."""

    def open_store(self, clock: ManualClock) -> AbstractContextManager[Runtime]:
        """The one factory a subclass overrides to run the machine on another store."""
        return memory_store(clock)

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.resources = ExitStack()
        self.rt: Runtime = self.resources.enter_context(self.open_store(self.clock))
        self.world: World | None = None
        self.model: Model | None = None
        self.entries_seen: dict[str, CommissionEntry] = {}
        self.accepted: list[tuple[str, Mode, tuple[Any, ...]]] = []

    def teardown(self) -> None:
        self.resources.close()

    @initialize(terms=commission_terms, hold_days=st.sampled_from((0, 1, 30)))
    def set_up(self, terms: dict[str, Any], hold_days: int) -> None:
        world = build_world(self.rt, self.clock, commission=terms, hold_days=hold_days)
        second = world.add_affiliate("second@example.com")
        second_link = world.add_link(second)
        model = Model(terms=terms, hold_days=hold_days)
        for mode in MODES:
            for link, affiliate in ((world.link, world.affiliate), (second_link, second)):
                customer = world.referred_customer(mode, link=link).customer
                model.customers.append(CustomerModel(customer.id, mode, affiliate.id))
            # The affiliate's own e-mail: a self-referral, identified but not attributed.
            unattributed = world.referred_customer(mode, email="partner@example.com").customer
            model.customers.append(CustomerModel(unattributed.id, mode, None))
        self.world, self.model = world, model
        self.affiliates = (world.affiliate.id, second.id)
        self.entries_seen = {e.id: e for e in world.entries()}
        self.setup_events = Counter((e.type, e.data["id"]) for e in world.events())

    # -- performing one call against its prediction ------------------------------------------------

    def perform(self, call: Any, expected: str) -> tuple[Recorded | None, dict[str, list[Any]]]:
        """Run ``call``; ``expected`` is ``created``, ``advanced``, ``replay`` or an error code.

        Returns the result (``None`` for a rejection) and the snapshot taken before the call.
        """
        event(f"outcome: {expected}")
        before = snapshot(self.rt)
        try:
            result = call()
        except RefcoreError as error:
            assert error.code == expected, f"expected {expected}, got {error!r}"
            self.assert_unchanged(before)
            return None, before
        assert expected in ("created", "advanced", "replay"), f"expected {expected}, got {result!r}"
        assert result.created is (expected == "created")
        if expected == "replay":
            self.assert_unchanged(before)
        return result, before

    def assert_unchanged(self, before: dict[str, list[Any]]) -> None:
        after = snapshot(self.rt)
        assert [name for name in REPOSITORIES if after[name] != before[name]] == []

    def check_appended(
        self,
        before: dict[str, list[Any]],
        payment: PaymentModel,
        old_target: int,
        source_id: str,
        record_event: tuple[EventType, str] | None,
        earned: bool = False,
    ) -> None:
        """Exactly the predicted entry (if any) and the predicted events were appended."""
        old_entries = {e.id for e in before["commission_entries"]}
        new_entries = [e for e in self.world_entries() if e.id not in old_entries]
        delta = payment.target - old_target
        if delta < 0:
            payment.reversed += delta
        expected_events = [record_event] if record_event else []
        if delta == 0:
            assert new_entries == []
        else:
            (entry,) = new_entries
            kind = (
                EntryKind.EARNED if earned else EntryKind.REVERSAL if delta < 0 else EntryKind.REINSTATEMENT
            )
            assert (entry.kind, entry.amount, entry.source_id) == (kind, delta, source_id)
            assert (entry.transaction_id, entry.program_affiliate_id) == (
                payment.txn_id,
                payment.affiliate_id,
            )
            assert entry.available_at == payment.available_at
            event = EventType.COMMISSION_REVERSED if delta < 0 else EventType.COMMISSION_CREATED
            expected_events.append((event, entry.id))
        old_events = {e.id for e in before["events"]}
        new_events = [(e.type, e.data["id"]) for e in self.world.events() if e.id not in old_events]  # type: ignore[union-attr]
        assert new_events == expected_events

    def world_entries(self) -> list[CommissionEntry]:
        assert self.world is not None
        return self.world.entries()

    # -- drawing arguments ---------------------------------------------------------------------
    #
    # Uniform choices would mostly hit "payment_not_found" and "validation_error"; the draws below
    # favour existing payments and amounts near the payment's remaining balance, so refunds,
    # disputes and their conflicts happen often, while every kind of rejection still occurs.

    def draw_payment_id(self, data: st.DataObject, mode: Mode) -> str:
        assert self.model is not None
        known = sorted(pid for (m, pid) in self.model.payments if m is mode)
        if known and data.draw(st.sampled_from((True, True, True, True, False))):
            return data.draw(st.sampled_from(known))
        return data.draw(st.sampled_from(PAYMENT_IDS))

    def draw_amount(self, data: st.DataObject, mode: Mode, payment_id: str) -> object:
        """A positive amount: usually within or just over what the payment has left."""
        assert self.model is not None
        payment = self.model.payments.get((mode, payment_id))
        left = 0 if payment is None else payment.amount - payment.consumed
        kind = data.draw(st.sampled_from(("within", "within", "within", "edge", "any", "bad")))
        if kind == "within" and left > 0:
            return data.draw(st.integers(1, left))
        if kind == "edge":
            return data.draw(st.sampled_from((max(left, 1), left + 1, INT32_MAX)))
        if kind == "bad":
            return data.draw(st.sampled_from((0, *BAD_AMOUNTS)))
        return data.draw(st.integers(1, 12_000))

    # -- rules -------------------------------------------------------------------------------

    @rule(
        mode=st.sampled_from(MODES),
        customer=st.integers(0, 2),
        cross_mode=st.sampled_from((False,) * 9 + (True,)),
        fresh=st.sampled_from((True, True, True, False)),
        amount=st.sampled_from(("any", "any", "any", "zero", "max", "bad")),
        currency=st.sampled_from((CURRENCY,) * 9 + ("eur",)),
        data=st.data(),
    )
    def pay(
        self,
        mode: Mode,
        customer: int,
        cross_mode: bool,
        fresh: bool,
        amount: str,
        currency: str,
        data: st.DataObject,
    ) -> None:
        assert self.model is not None
        unused = [pid for pid in PAYMENT_IDS if (mode, pid) not in self.model.payments]
        payment_id = data.draw(st.sampled_from(unused if fresh and unused else PAYMENT_IDS))
        index = customer + (3 if (mode is Mode.LIVE) != cross_mode else 0)  # customers: 3 test, then 3 live
        value = {
            "any": lambda: data.draw(st.integers(0, 10_000)),
            "zero": lambda: 0,
            "max": lambda: INT32_MAX,
            "bad": lambda: data.draw(st.sampled_from(BAD_AMOUNTS)),
        }[amount]()
        self.report_payment(mode, index, payment_id, value, currency)

    @precondition(lambda self: self.model is not None and self.model.payments)
    @rule(mode=st.sampled_from(MODES), refund_id=st.sampled_from(REFUND_IDS), data=st.data())
    def refund(self, mode: Mode, refund_id: str, data: st.DataObject) -> None:
        payment_id = self.draw_payment_id(data, mode)
        self.report_refund(mode, refund_id, payment_id, self.draw_amount(data, mode, payment_id))

    @precondition(lambda self: self.model is not None and self.model.payments)
    @rule(
        mode=st.sampled_from(MODES),
        dispute_id=st.sampled_from(DISPUTE_IDS),
        status=st.sampled_from((*STATUSES, "opened", "opened", "opened", "lost", "closed")),
        data=st.data(),
    )
    def dispute(self, mode: Mode, dispute_id: str, status: str, data: st.DataObject) -> None:
        payment_id = self.draw_payment_id(data, mode)
        self.report_dispute(mode, dispute_id, payment_id, status, self.draw_amount(data, mode, payment_id))

    @precondition(lambda self: self.model is not None and self.model.disputes)
    @rule(data=st.data(), forward=st.sampled_from((True, True, True, False)))
    def report_on_a_known_dispute(self, data: st.DataObject, forward: bool) -> None:
        """A status report for an existing dispute: mostly a move the table allows, else
        any status (replays, delayed reports and conflicts)."""
        assert self.model is not None
        (mode, dispute_id), (payment_id, amount, current) = data.draw(
            st.sampled_from(sorted(self.model.disputes.items(), key=lambda kv: (kv[0][0].value, kv[0][1])))
        )
        moves = sorted(after for before, after in FORWARD if before == current)
        status = data.draw(st.sampled_from(moves if forward and moves else STATUSES))
        self.report_dispute(mode, dispute_id, payment_id, status, amount)

    @rule(data=st.data())
    def replay_an_accepted_report(self, data: st.DataObject) -> None:
        """Send an accepted report again, unchanged: always a replay that changes nothing."""
        if not self.accepted:
            return
        kind, mode, args = data.draw(st.sampled_from(self.accepted))
        before = snapshot(self.rt)
        {"pay": self.report_payment, "refund": self.report_refund, "dispute": self.report_dispute}[kind](
            mode, *args
        )
        self.assert_unchanged(before)

    @rule(data=st.data(), change=st.sampled_from(("amount", "payment", "other")))
    def replay_with_a_conflicting_payload(self, data: st.DataObject, change: str) -> None:
        """Send an accepted report again with one field changed; the model predicts the outcome."""
        if not self.accepted:
            return
        kind, mode, args = data.draw(st.sampled_from(self.accepted))
        if kind == "pay":
            customer, payment_id, amount, currency = args
            if change == "payment":  # another customer of the same mode
                customer = (customer // 3) * 3 + (customer + 1) % 3
            elif change == "other":
                currency = "eur"
            else:
                amount += 1
            self.report_payment(mode, customer, payment_id, amount, currency)
        elif kind == "refund":
            refund_id, payment_id, amount = args
            if change == "payment":
                payment_id = PAYMENT_IDS[(PAYMENT_IDS.index(payment_id) + 1) % len(PAYMENT_IDS)]
            else:
                amount += 1
            self.report_refund(mode, refund_id, payment_id, amount)
        else:
            dispute_id, payment_id, status, amount = args
            if change == "payment":
                payment_id = PAYMENT_IDS[(PAYMENT_IDS.index(payment_id) + 1) % len(PAYMENT_IDS)]
            elif change == "other":
                status = data.draw(st.sampled_from(STATUSES))
            else:
                amount += 1
            self.report_dispute(mode, dispute_id, payment_id, status, amount)

    @rule(
        step=st.sampled_from((timedelta(hours=1), timedelta(days=1), timedelta(days=15), timedelta(days=31)))
    )
    def advance_clock(self, step: timedelta) -> None:
        self.clock.advance(step)

    # -- reports, each checked against the model's prediction ---------------------------------------

    def report_payment(
        self, mode: Mode, customer: int, payment_id: str, amount: object, currency: str
    ) -> None:
        assert self.world is not None and self.model is not None
        world, model = self.world, self.model
        buyer = model.customers[customer]
        existing = model.payments.get((mode, payment_id))
        if not valid_amount(amount, positive=False):
            expected = "validation_error"
        elif existing is not None:
            same = (existing.customer_id, existing.amount, CURRENCY) == (buyer.id, amount, currency)
            expected = "replay" if same else "idempotency_conflict"
        elif buyer.mode is not mode:
            expected = "mode_mismatch"
        elif currency != CURRENCY:
            expected = "currency_mismatch"
        else:
            expected = "created"
        result, before = self.perform(
            lambda: world.pay(buyer.id, amount, mode=mode, payment_id=payment_id, currency=currency), expected
        )
        if expected == "replay":
            assert existing is not None and result is not None and result.record.id == existing.txn_id
        if expected != "created":
            return
        assert result is not None and isinstance(amount, int)
        commission = model_commission(model.terms, amount) if buyer.affiliate_id else 0
        record = result.record
        payment = PaymentModel(
            txn_id=record.id,
            customer_id=buyer.id,
            amount=amount,
            commission=commission,
            affiliate_id=buyer.affiliate_id,
            available_at=self.clock.now() + timedelta(days=model.hold_days),
        )
        model.payments[(mode, payment_id)] = payment
        self.accepted.append(("pay", mode, (customer, payment_id, amount, currency)))
        self.check_appended(
            before, payment, 0, record.id, (EventType.TRANSACTION_CREATED, record.id), earned=True
        )

    def report_refund(self, mode: Mode, refund_id: str, payment_id: str, amount: object) -> None:
        assert self.world is not None and self.model is not None
        world, model = self.world, self.model
        existing = model.refunds.get((mode, refund_id))
        payment = model.payments.get((mode, payment_id))
        if not valid_amount(amount, positive=True):
            expected = "validation_error"
        elif existing is not None:
            expected = "replay" if existing == (payment_id, amount) else "idempotency_conflict"
        elif payment is None:
            expected = "payment_not_found"
        elif payment.consumed + amount > payment.amount:  # type: ignore[operator]
            expected = "amount_exceeds_payment"
        else:
            expected = "created"
        result, before = self.perform(
            lambda: world.refund(payment_id, amount, refund_id=refund_id, mode=mode), expected
        )
        if expected != "created":
            return
        assert result is not None and payment is not None and isinstance(amount, int)
        old_target = payment.target
        payment.refunded += amount
        model.refunds[(mode, refund_id)] = (payment_id, amount)
        self.accepted.append(("refund", mode, (refund_id, payment_id, amount)))
        record = result.record
        self.check_appended(
            before, payment, old_target, record.id, (EventType.TRANSACTION_REFUNDED, record.id)
        )

    def report_dispute(
        self, mode: Mode, dispute_id: str, payment_id: str, status: str, amount: object
    ) -> None:
        assert self.world is not None and self.model is not None
        world, model = self.world, self.model
        existing = model.disputes.get((mode, dispute_id))
        payment = model.payments.get((mode, payment_id))
        if status not in STATUSES or not valid_amount(amount, positive=True):
            expected = "validation_error"
        elif existing is not None and (existing[0], existing[1]) != (payment_id, amount):
            expected = "idempotency_conflict"
        elif payment is None:
            expected = "payment_not_found"
        elif existing is None:
            if status == "funds_reinstated":
                expected = "dispute_conflict"
            elif status in ("opened", "lost") and payment.consumed + amount > payment.amount:  # type: ignore[operator]
                expected = "amount_exceeds_payment"
            elif amount > payment.amount:  # type: ignore[operator]
                expected = "amount_exceeds_payment"  # no dispute is larger than its payment
            else:
                expected = "created"
        elif status == existing[2] or status in PASSED[existing[2]]:
            expected = "replay"
        elif (existing[2], status) in FORWARD:
            expected = "advanced"
        else:
            expected = "dispute_conflict"
        event(f"dispute report: {existing[2] if existing else None} -> {status}: {expected}")
        result, before = self.perform(
            lambda: world.dispute(dispute_id, payment_id, status, amount, mode=mode), expected
        )
        if expected not in ("created", "advanced"):
            return
        assert result is not None and payment is not None and isinstance(amount, int)
        old_target = payment.target
        if existing is None:
            payment.move_dispute(None, status, amount)
            model.disputes[(mode, dispute_id)] = [payment_id, amount, status]
        else:
            payment.move_dispute(existing[2], status, amount)
            existing[2] = status
        assert result.record.status.value == status
        self.accepted.append(("dispute", mode, (dispute_id, payment_id, status, amount)))
        self.check_appended(before, payment, old_target, result.record.id, None)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def ledger_meets_the_formula_and_payments_are_never_overdrawn(self) -> None:
        if self.model is None:
            return
        tables = snapshot(self.rt)
        entries_by_payment: dict[str, int] = Counter()
        for entry in tables["commission_entries"]:
            entries_by_payment[entry.transaction_id] += entry.amount
        stored = {p.id: p for p in tables["payments"]}
        refunded: dict[str, int] = Counter()
        for refund in tables["refunds"]:
            refunded[refund.transaction_id] += refund.amount
        consuming: dict[str, int] = Counter()
        for dispute in tables["disputes"]:
            if dispute.status.value in ("opened", "lost"):
                consuming[dispute.transaction_id] += dispute.amount
        assert len(stored) == len(self.model.payments)
        for payment in self.model.payments.values():
            total = entries_by_payment[payment.txn_id]
            expected = payment.commission - (
                payment.commission * (payment.refunded + payment.lost) // payment.amount
                if payment.amount
                else 0
            )
            assert total == expected == payment.target
            assert 0 <= total <= payment.commission
            assert payment.consumed <= payment.amount
            row = stored[payment.txn_id]
            assert (row.commission_amount, row.refunded_amount, row.lost_amount) == (
                payment.commission,
                payment.refunded,
                payment.lost,
            )
            assert (row.disputed_amount, row.open_dispute_count) == (
                payment.opened + payment.lost,
                payment.open_count,
            )
            assert refunded[payment.txn_id] + consuming[payment.txn_id] == payment.consumed

    @invariant()
    def existing_entries_never_change(self) -> None:
        if self.model is None:
            return
        current = {e.id: e for e in self.world_entries()}
        for entry_id, entry in self.entries_seen.items():
            assert current.get(entry_id) == entry
        self.entries_seen = current

    @invariant()
    def balances_equal_sums_of_entries_by_status(self) -> None:
        if self.model is None or self.world is None:
            return
        now = self.clock.now()
        expected = {aff: Counter() for aff in self.affiliates}
        for (mode, _), payment in self.model.payments.items():
            if mode is not Mode.LIVE or payment.affiliate_id is None:
                continue
            status = "pending" if now < payment.available_at else "available"
            if payment.open_count:  # an open dispute holds the positive entries, never a reversal
                expected[payment.affiliate_id]["held"] += payment.target - payment.reversed
                expected[payment.affiliate_id][status] += payment.reversed
            else:
                expected[payment.affiliate_id][status] += payment.target
        for affiliate_id in self.affiliates:
            balance = commissions.payout_balance(self.rt, self.world.session, affiliate_id)
            want = expected[affiliate_id]
            assert (balance.pending, balance.held, balance.available, balance.paid) == (
                want["pending"],
                want["held"],
                want["available"],
                0,
            )

    @invariant()
    def each_created_record_has_exactly_one_event(self) -> None:
        if self.model is None or self.world is None:
            return
        tables = snapshot(self.rt)
        expected = Counter(self.setup_events)
        for payment in tables["payments"]:
            expected[(EventType.TRANSACTION_CREATED, payment.id)] += 1
        for refund in tables["refunds"]:
            expected[(EventType.TRANSACTION_REFUNDED, refund.id)] += 1
        for entry in tables["commission_entries"]:
            kind = (
                EventType.COMMISSION_REVERSED
                if entry.kind is EntryKind.REVERSAL
                else EventType.COMMISSION_CREATED
            )
            expected[(kind, entry.id)] += 1
        actual = Counter((e.type, e.data["id"]) for e in tables["events"])
        assert actual == expected
        assert {e.livemode for e in tables["events"] if e.type is EventType.TRANSACTION_CREATED} <= {
            True,
            False,
        }
        modes = {p.id: p.mode for p in tables["payments"]}
        for created in tables["events"]:
            if created.type is EventType.TRANSACTION_CREATED:
                assert created.livemode is (modes[created.data["id"]] is Mode.LIVE)

    @invariant()
    def first_positive_live_payment_locks_the_revenue_source(self) -> None:
        if self.model is None or self.world is None:
            return
        locked = any(mode is Mode.LIVE and p.amount > 0 for (mode, _), p in self.model.payments.items())
        app = self.world.current_app()
        assert app.live_revenue_source is (RevenueSource.API if locked else None)


#: A few dozen steps reach deep dispute histories on three payments per mode while 1,000
#: examples (the ``ci`` profile) stay within a minute or two on the memory store.
STEPS = 40

TestLedgerOnMemory = LedgerMachine.TestCase
TestLedgerOnMemory.settings = settings(stateful_step_count=STEPS)
