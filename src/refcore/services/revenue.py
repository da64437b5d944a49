"""Payments, refunds and disputes (interface 2.6-2.8, 3.1, 4.1; decisions 4).

Each report is idempotent by its caller-chosen ID within one App and mode. The parent payment
is locked (``for_update``) before its consumption is checked, so concurrent refunds and
disputes on one payment are applied one after another, on every store.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Generic, TypeVar

from attrs import evolve, frozen

from refcore.credentials import shown
from refcore.errors import (
    CurrencyMismatch,
    DisputeConflict,
    IdempotencyConflict,
    NotFound,
    RevenueSourceConflict,
    ValidationError,
)
from refcore.models import (
    App,
    Customer,
    Dispute,
    DisputeStatus,
    EntryKind,
    EventType,
    Mode,
    Payment,
    Program,
    ProgramAffiliate,
    Referral,
    Refund,
    RevenueSource,
)
from refcore.ports.lookups import FieldOf, Lookup
from refcore.representation import represent
from refcore.rules import disputes as dispute_rules
from refcore.rules.commission import commission_for_payment
from refcore.rules.consumption import require_dispute_within_payment, require_within_payment
from refcore.rules.earning import payment_earns
from refcore.rules.money import is_iso_4217, require_amount, require_currency_format, require_iso_4217
from refcore.services.access import check_activity
from refcore.services.ledger import append_entry, rebalance
from refcore.services.principal import Scope
from refcore.services.runtime import Runtime, Tx
from refcore.validation import require_bool, require_choice, require_text

#: What a revenue report records: a payment, a refund or a dispute.
R = TypeVar("R", bound="Payment | Refund | Dispute", covariant=True)


@frozen
class Recorded(Generic[R]):
    """The stored object and whether this call created it (``201``) or found it (``200``).

    Generic in the record, so that a library caller of ``record_payment`` gets a ``Payment``
    (``Recorded[Payment]``) without narrowing a union of the three first."""

    record: R
    created: bool


@frozen
class PaymentReport:
    payment_id: object
    customer_id: object
    program_id: object
    amount: object
    currency: object


@frozen
class RefundReport:
    refund_id: object
    payment_id: object
    amount: object
    #: Only the processor reports one (the API's refund carries none, interface 2.7); when given
    #: it must be the payment's currency (:func:`_require_payment_currency`).
    currency: object = None


@frozen
class DisputeReport:
    dispute_id: object
    payment_id: object
    status: object
    amount: object
    #: As :attr:`RefundReport.currency`: the processor's, compared with the payment's.
    currency: object = None
    #: The processor reports an inquiry, not a chargeback (:attr:`refcore.models.Dispute.inquiry`).
    inquiry: bool = False


# -- payments --------------------------------------------------------------------------------


def record_payment(
    rt: Runtime, scope: Scope, report: PaymentReport, *, source: RevenueSource = RevenueSource.API
) -> Recorded[Payment]:
    """Record a payment of a customer that identify created, once per ``payment_id`` in the scope's App and
    mode (``POST /v1/transactions``; processor payments come here too, with ``source=processor``). An
    exact replay answers the stored payment (``created=False``) and any difference is a conflict, so a
    retried report never counts a payment twice. A payment that earns appends its commission entry;
    ``transaction.created`` (and ``commission.created``) are emitted, and the first positive Live
    payment locks the App's revenue source (interface 4.1 rule 9).

    ``scope`` is taken as given: a library caller gets it from an authenticated key with
    :func:`refcore.services.access.activity_scope`.

    Errors: ``validation_error`` (a field's type or range, a currency ISO 4217 does not list, a customer
    identified in another program), ``idempotency_conflict``, ``app_not_found`` (a scope naming no App),
    ``revenue_source_conflict``, ``customer_not_found``, ``mode_mismatch`` (a customer of the other
    mode), ``program_not_found``, ``currency_mismatch``."""
    payment_id = require_text(report.payment_id, param="payment_id")
    customer_id = require_text(report.customer_id, param="customer_id")
    program_id = require_text(report.program_id, param="program_id")
    amount = require_amount(report.amount, param="amount", positive=False)
    currency = require_currency_format(report.currency)
    # A library caller's "api" is the member: compared by identity below, the string had
    # passed for processor revenue and then failed in the answer's representation (probe L).
    source = require_choice(source, RevenueSource, param="source")

    def work(tx: Tx) -> Recorded[Payment]:
        # Everything the payment reads, in one statement on a SQL store (ports.lookups); the
        # checks below keep the order, and so the errors, of reading them one by one.
        existing = Lookup("payments", Payment, _payment_key(scope, payment_id))
        app_ = Lookup("apps", App, {"id": scope.app_id})
        customer_ = Lookup("customers", Customer, {"id": customer_id})
        program_ = Lookup("programs", Program, {"id": program_id})
        referral_ = Lookup("referrals", Referral, {"customer_id": customer_id})
        affiliate_ = Lookup(
            "program_affiliates", ProgramAffiliate, {"id": FieldOf(referral_, "program_affiliate_id")}
        )
        found = tx.look_up_before_events(
            scope.app_id, existing, app_, customer_, program_, referral_, affiliate_
        )
        if not is_iso_4217(currency):
            # Before every other answer, like the checks of the form above: a code ISO 4217 does
            # not list is refused unless it is the program's own, taken before ISO withdrew it.
            require_iso_4217(currency, in_use=_currencies_of(found[program_], scope))
        replayed = _replayed(found[existing], payment_id, (customer_id, program_id, amount, currency))
        if replayed is not None:
            return replayed
        app = _taking_revenue(found[app_], scope, source)
        customer = check_activity(found[customer_], "customer", customer_id, scope)
        program = found[program_]
        if program is None or program.app_id != scope.app_id:
            raise NotFound.of("program", program_id)
        referral = found[referral_]
        assert referral is not None, "identify always creates the customer's referral"
        if referral.program_id != program.id:
            raise ValidationError(
                f"customer {customer.id} was identified in program {referral.program_id}",
                param="program_id",
            )
        if currency != program.currency:
            raise CurrencyMismatch(
                f"currency must be the program currency {program.currency}", param="currency"
            )
        affiliate = found[affiliate_]
        earns = payment_earns(referral, program, affiliate, tx.now)
        payment = Payment(
            id=tx.new_id("txn"),
            app_id=scope.app_id,
            mode=scope.mode,
            payment_id=payment_id,
            customer_id=customer.id,
            program_id=program.id,
            referral_id=referral.id,
            amount=amount,
            currency=currency,
            attributed=referral.attributed,
            commission_amount=commission_for_payment(program.commission, amount) if earns else 0,
            available_at=tx.now + timedelta(days=program.hold_days),
            source=source,
            created_at=tx.now,
            program_affiliate_id=referral.program_affiliate_id if referral.attributed else None,
        )
        return _store_new_payment(tx, app, payment)

    return rt.transaction(work)


@frozen
class UnattributedPaymentReport:
    """A payment with no customer: the processor reported it without identify metadata."""

    payment_id: object
    amount: object
    currency: object


def record_unattributed_payment(
    rt: Runtime, scope: Scope, report: UnattributedPaymentReport, *, source: RevenueSource
) -> Recorded[Payment]:
    """Keep a payment that names no customer in history: unattributed, no commission, no program.

    Only the processor reports such payments (its payments carry the identify metadata when the
    App attached it; decisions 4, "unattributed payments"). Idempotent like :func:`record_payment`,
    and it locks the revenue source the same way, so history and the lock never depend on whether
    the App remembered the metadata. Its currency is one ISO 4217 lists, or one of the App's
    programs' currencies (which they keep after ISO withdraws it), checked before anything else.
    """
    payment_id = require_text(report.payment_id, param="payment_id")
    amount = require_amount(report.amount, param="amount", positive=False)
    source = require_choice(source, RevenueSource, param="source")
    currency = require_currency_format(report.currency)

    def work(tx: Tx) -> Recorded[Payment]:
        if not is_iso_4217(currency):
            programs = tx.uow.programs.find_all({"app_id": scope.app_id})
            require_iso_4217(currency, in_use={program.currency for program in programs})
        replayed = _replayed_payment(tx, scope, payment_id, (None, None, amount, currency))
        if replayed is not None:
            return replayed
        app = _app_taking_revenue(tx, scope, source)
        payment = Payment(
            id=tx.new_id("txn"),
            app_id=scope.app_id,
            mode=scope.mode,
            payment_id=payment_id,
            customer_id=None,
            program_id=None,
            referral_id=None,
            amount=amount,
            currency=currency,
            attributed=False,
            commission_amount=0,
            available_at=tx.now,
            source=source,
            created_at=tx.now,
        )
        return _store_new_payment(tx, app, payment)

    return rt.transaction(work)


def _currencies_of(program: Program | None, scope: Scope) -> tuple[str, ...]:
    """The currency a payment for ``program`` may carry besides the ISO 4217 codes: its own, if
    the program is the scope's (another App's program is not found, so it allows nothing)."""
    if program is None or program.app_id != scope.app_id:
        return ()
    return (program.currency,)


def _payment_key(scope: Scope, payment_id: str) -> dict[str, object]:
    """The fields that find a payment by its caller-chosen ID (unique per App and mode)."""
    return {"app_id": scope.app_id, "mode": scope.mode, "payment_id": payment_id}


def _replayed_payment(
    tx: Tx, scope: Scope, payment_id: str, identity: tuple[object, ...]
) -> Recorded[Payment] | None:
    """:func:`_replayed` for the payment stored under ``payment_id``, read alone."""
    return _replayed(tx.uow.payments.find_one(_payment_key(scope, payment_id)), payment_id, identity)


def _replayed(
    existing: Payment | None, payment_id: str, identity: tuple[object, ...]
) -> Recorded[Payment] | None:
    """The stored payment when this report repeats it exactly; ``None`` when the ID is new.

    ``identity`` is (customer_id, program_id, amount, currency): any difference is a conflict.
    """
    if existing is None:
        return None
    stored = (existing.customer_id, existing.program_id, existing.amount, existing.currency)
    if stored != identity:
        raise IdempotencyConflict(
            f"payment_id {shown(payment_id)} was already used with different details", param="payment_id"
        )
    return Recorded(existing, created=False)


def _app_taking_revenue(tx: Tx, scope: Scope, source: RevenueSource) -> App:
    return _taking_revenue(tx.uow.apps.get(scope.app_id), scope, source)


def _taking_revenue(app: App | None, scope: Scope, source: RevenueSource) -> App:
    """The scope's App (read already), if it takes revenue from ``source`` in the scope's mode.

    An authenticated key's scope always names an App; a library caller's ``Scope`` may name one
    that does not exist, which is ``app_not_found`` (it had been a bare ``AssertionError``)."""
    if app is None:
        raise NotFound.of("app", scope.app_id)
    _require_revenue_source(app, scope.mode, source)
    return app


def _store_new_payment(tx: Tx, app: App, payment: Payment) -> Recorded[Payment]:
    """Add the payment, lock the revenue source if it is the first, emit, and earn."""
    tx.uow.payments.add(payment)
    _lock_revenue_source(tx, app, payment.mode, payment.source, payment.amount)
    tx.emit(
        EventType.TRANSACTION_CREATED,
        app_id=payment.app_id,
        livemode=payment.mode.livemode,
        data=represent(payment),
    )
    if payment.commission_amount > 0:
        append_entry(tx, payment, EntryKind.EARNED, payment.commission_amount, payment.id)
    return Recorded(payment, created=True)


def _require_revenue_source(app: App, mode: Mode, source: RevenueSource) -> None:
    """API revenue is refused once the processor is connected in that mode or owns the lock;
    processor revenue is refused once API revenue owns the lock (decisions 4)."""
    if source is not RevenueSource.API:
        if mode is Mode.LIVE and app.live_revenue_source is RevenueSource.API:
            raise RevenueSourceConflict(
                "This App's Live revenue source is locked to API reporting; processor revenue is refused"
            )
        return
    locked_to_processor = mode is Mode.LIVE and app.live_revenue_source is RevenueSource.PROCESSOR
    if app.processor_connected(mode) or locked_to_processor:
        raise RevenueSourceConflict(
            "This App takes its revenue from the payment processor; API revenue is refused"
        )


def _lock_revenue_source(tx: Tx, app: App, mode: Mode, source: RevenueSource, amount: int) -> None:
    """The first positive Live payment locks the App's revenue source (interface 4.1 rule 9)."""
    if mode is not Mode.LIVE or amount <= 0 or app.live_revenue_source is not None:
        return
    locked = tx.uow.apps.get(app.id, for_update=True)
    assert locked is not None
    # Check again under the App's lock: a processor claim (which takes the same lock) may have
    # connected the processor, or another payment locked the source, since the unlocked read.
    _require_revenue_source(locked, mode, source)
    if locked.live_revenue_source is None:
        tx.uow.apps.replace(evolve(locked, live_revenue_source=source))


def _locked_payment_if_any(tx: Tx, scope: Scope, payment_id: str) -> Payment | None:
    """The scope's payment of ``payment_id``, its row locked until the transaction ends."""
    return tx.uow.payments.find_one(
        {"app_id": scope.app_id, "mode": scope.mode, "payment_id": payment_id}, for_update=True
    )


def _locked_payment(tx: Tx, scope: Scope, payment_id: str) -> Payment:
    payment = _locked_payment_if_any(tx, scope, payment_id)
    if payment is None:
        raise NotFound.of("payment", payment_id)
    return payment


def _reported_currency(value: object) -> str | None:
    """A refund's or dispute's reported currency, in form; ``None`` when none was reported."""
    return None if value is None else require_currency_format(value)


def _require_payment_currency(payment: Payment, currency: str | None) -> None:
    """A refund or dispute that names its currency (the processor's do) is in its payment's:
    its amount is applied to the payment as minor units of the payment's currency."""
    if currency is not None and currency != payment.currency:
        raise CurrencyMismatch(
            f"currency must be the currency of payment {payment.payment_id}, {payment.currency}",
            param="currency",
        )


# -- refunds ---------------------------------------------------------------------------------


def record_refund(
    rt: Runtime, scope: Scope, report: RefundReport, *, source: RevenueSource = RevenueSource.API
) -> Recorded[Refund]:
    """Record a refund of the scope's payment ``payment_id``, once per ``refund_id``
    (``POST /v1/transactions/refunds``). Under the payment's row lock the refunds plus the opened and
    lost disputes may not exceed the payment, and the ledger is brought to its target (one ``reversal``
    entry at most); emits ``transaction.refunded`` (and ``commission.reversed``). An exact replay
    answers the stored refund (``created=False``).

    Errors: ``validation_error``, ``idempotency_conflict``, ``app_not_found``,
    ``revenue_source_conflict``, ``payment_not_found`` (no such ``payment_id`` in this mode),
    ``currency_mismatch`` (a processor refund in another currency), ``amount_exceeds_payment``."""
    refund_id = require_text(report.refund_id, param="refund_id")
    payment_id = require_text(report.payment_id, param="payment_id")
    amount = require_amount(report.amount, param="amount", positive=True)
    currency = _reported_currency(report.currency)
    source = require_choice(source, RevenueSource, param="source")

    where = {"app_id": scope.app_id, "mode": scope.mode, "refund_id": refund_id}

    def replay(existing: Refund | None) -> Recorded[Refund] | None:
        """The stored refund when this report repeats one; ``None`` when the refund is new."""
        if existing is None:
            return None
        if (existing.payment_id, existing.amount) != (payment_id, amount):
            raise IdempotencyConflict(
                f"refund_id {shown(refund_id)} was already used with different details",
                param="refund_id",
            )
        return Recorded(existing, created=False)

    def work(tx: Tx) -> Recorded[Refund]:
        # The payment's row lock first, then the replay check and the App in one statement on
        # a SQL store (ports.lookups): read under the lock, the check sees the same refund
        # reported concurrently if it committed while this report waited for the lock
        # (PostgreSQL reads at READ COMMITTED, each statement as of its start). A new refund
        # reads twice instead of three times; a replay holds the lock for as long as its read.
        # A missing payment is reported after the replay check, as before.
        payment = _locked_payment_if_any(tx, scope, payment_id)
        stored_ = Lookup("refunds", Refund, where)
        app_ = Lookup("apps", App, {"id": scope.app_id})
        found = tx.look_up_before_events(scope.app_id, stored_, app_)
        replayed = replay(found[stored_])
        if replayed is not None:
            return replayed
        _taking_revenue(found[app_], scope, source)
        if payment is None:
            raise NotFound.of("payment", payment_id)
        _require_payment_currency(payment, currency)
        require_within_payment(payment, amount)
        refund = Refund(
            id=tx.new_id("txn"),
            app_id=scope.app_id,
            mode=scope.mode,
            refund_id=refund_id,
            payment_id=payment_id,
            transaction_id=payment.id,
            amount=amount,
            created_at=tx.now,
        )
        tx.uow.refunds.add(refund)
        before = payment
        payment = evolve(payment, refunded_amount=payment.refunded_amount + amount)
        tx.uow.payments.replace(payment)
        tx.emit(
            EventType.TRANSACTION_REFUNDED,
            app_id=scope.app_id,
            livemode=scope.mode.livemode,
            data=represent(refund),
        )
        rebalance(tx, before, payment, refund.id)
        return Recorded(refund, created=True)

    return rt.transaction(work)


# -- disputes --------------------------------------------------------------------------------


def report_dispute(
    rt: Runtime, scope: Scope, report: DisputeReport, *, source: RevenueSource = RevenueSource.API
) -> Recorded[Dispute]:
    """Report one status of a dispute of the scope's payment ``payment_id``
    (``POST /v1/transactions/disputes``). The first report creates the dispute (``opened``, ``won``,
    ``withdrawn`` or ``lost``), later ones move it along interface 3.1 (:mod:`refcore.rules.disputes`);
    a status it has already reached or passed is a replay (``created=False``). An open dispute holds the
    payment's commission, ``lost`` reverses it and ``funds_reinstated`` restores it.

    Errors: ``validation_error``, ``idempotency_conflict`` (the ``dispute_id`` with another payment or
    amount), ``app_not_found``, ``revenue_source_conflict``, ``payment_not_found``,
    ``currency_mismatch``, ``amount_exceeds_payment``, ``dispute_conflict`` (a move outside the
    lifecycle)."""
    dispute_id = require_text(report.dispute_id, param="dispute_id")
    payment_id = require_text(report.payment_id, param="payment_id")
    status = require_choice(report.status, DisputeStatus, param="status")
    amount = require_amount(report.amount, param="amount", positive=True)
    currency = _reported_currency(report.currency)
    source = require_choice(source, RevenueSource, param="source")
    inquiry = require_bool(report.inquiry, param="inquiry")

    def same_identity(existing: Dispute | None) -> Dispute | None:
        """The stored dispute, if any, provided this report names the same payment and amount."""
        if existing is not None and (existing.payment_id, existing.amount) != (payment_id, amount):
            raise IdempotencyConflict(
                f"dispute_id {shown(dispute_id)} was already used with a different payment or amount",
                param="dispute_id",
            )
        return existing

    def move_of(existing: Dispute) -> dispute_rules.Move:
        return dispute_rules.classify_report(
            existing.status, status, current_inquiry=existing.inquiry, reported_inquiry=inquiry
        )

    def work(tx: Tx) -> Recorded[Dispute]:
        where = {"app_id": scope.app_id, "mode": scope.mode, "dispute_id": dispute_id}
        stored = same_identity(tx.uow.disputes.find_one(where))
        if stored is not None and move_of(stored) is dispute_rules.Move.UNCHANGED:
            # A replay is answered from the stored dispute before anything else is checked, as
            # payments and refunds are: a stored answer never changes (e.g. after a processor
            # connection refuses new API revenue).
            return Recorded(stored, created=False)
        _app_taking_revenue(tx, scope, source)
        payment = _locked_payment(tx, scope, payment_id)
        # Read again under the payment's lock: a concurrent report may have just created it, and
        # perhaps for another payment (a different lock), so its identity is checked again.
        existing = same_identity(tx.uow.disputes.find_one(where, for_update=True))
        move = None if existing is None else move_of(existing)
        if move is not dispute_rules.Move.UNCHANGED:  # a replay is answered before any other check
            _require_payment_currency(payment, currency)
        if existing is None:
            return _open_dispute(tx, scope, payment, dispute_id, status, amount, inquiry=inquiry)
        return _advance_dispute(tx, payment, existing, status, inquiry=inquiry)

    return rt.transaction(work)


def _open_dispute(
    tx: Tx,
    scope: Scope,
    payment: Payment,
    dispute_id: str,
    status: DisputeStatus,
    amount: int,
    *,
    inquiry: bool,
) -> Recorded[Dispute]:
    if status not in dispute_rules.INITIAL_STATUSES:
        raise DisputeConflict(f"A dispute cannot start as {status.value}", param="status")
    inquiry = inquiry and status is not DisputeStatus.LOST  # lost, it took money: a chargeback
    if dispute_rules.consumes(status, inquiry=inquiry):
        require_within_payment(payment, amount)
    else:
        require_dispute_within_payment(payment, amount)
    dispute = Dispute(
        id=tx.new_id("dsp"),
        app_id=scope.app_id,
        mode=scope.mode,
        dispute_id=dispute_id,
        payment_id=payment.payment_id,
        transaction_id=payment.id,
        status=status,
        amount=amount,
        created_at=tx.now,
        updated_at=tx.now,
        inquiry=inquiry,
    )
    tx.uow.disputes.add(dispute)
    before = payment
    payment = _apply_to_payment(payment, None, dispute, amount)
    tx.uow.payments.replace(payment)
    if status is DisputeStatus.LOST:
        rebalance(tx, before, payment, dispute.id)
    return Recorded(dispute, created=True)


def _advance_dispute(
    tx: Tx, payment: Payment, dispute: Dispute, status: DisputeStatus, *, inquiry: bool
) -> Recorded[Dispute]:
    move = dispute_rules.classify_report(
        dispute.status, status, current_inquiry=dispute.inquiry, reported_inquiry=inquiry
    )
    if move is dispute_rules.Move.UNCHANGED:
        return Recorded(dispute, created=False)
    if move is dispute_rules.Move.CONFLICT:
        raise DisputeConflict(
            f"Dispute {dispute.dispute_id} is {dispute.status.value}; it cannot become {status.value}",
            param="status",
        )
    # An inquiry stops being one once it takes money: escalated to a chargeback, or lost.
    escalated = move is dispute_rules.Move.ESCALATE or status is DisputeStatus.LOST
    still_inquiry = dispute.inquiry and not escalated
    moved = evolve(dispute, status=status, updated_at=tx.now, inquiry=still_inquiry)
    if not _consumes(dispute) and _consumes(moved):
        require_within_payment(payment, dispute.amount)  # refunds made during an inquiry count
    before = payment
    payment = _apply_to_payment(payment, dispute, moved, dispute.amount)
    tx.uow.payments.replace(payment)
    tx.uow.disputes.replace(moved)
    if status in (DisputeStatus.LOST, DisputeStatus.FUNDS_REINSTATED):
        rebalance(tx, before, payment, moved.id)
    return Recorded(moved, created=False)


def _consumes(dispute: Dispute) -> bool:
    return dispute_rules.consumes(dispute.status, inquiry=dispute.inquiry)


def _apply_to_payment(payment: Payment, before: Dispute | None, after: Dispute, amount: int) -> Payment:
    """Move the payment's running dispute totals from a dispute's state (``None``: not yet
    recorded) to the next."""

    def weight(dispute: Dispute | None) -> tuple[int, int, int]:
        if dispute is None:
            return (0, 0, 0)
        return (
            amount if _consumes(dispute) else 0,
            amount if dispute.status is DisputeStatus.LOST else 0,
            1 if dispute.status is DisputeStatus.OPENED else 0,
        )

    (d0, l0, o0), (d1, l1, o1) = weight(before), weight(after)
    return evolve(
        payment,
        disputed_amount=payment.disputed_amount - d0 + d1,
        lost_amount=payment.lost_amount - l0 + l1,
        open_dispute_count=payment.open_dispute_count - o0 + o1,
    )
