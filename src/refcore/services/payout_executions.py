"""Payout executions: creating one, settling it, and the external reports (interface 3.2, 6.5).

The service never moves money. An execution records one payout to one affiliate; the App's
payout system (or a person, through mark-paid) says whether the money went out:

- ``succeeded``: its entries become ``paid`` (``commission.paid`` each) and ``payout.succeeded``
  is emitted; the affiliate's open payout request is closed as ``paid`` if this payout carries
  its money (:func:`record_success`).
- ``failed``: its items release their entries (``active_entry_id = None``), which are then
  available for a later payout, and ``payout.failed`` is emitted; a request it was to pay stays
  open for the next payout.
- ``canceled``: its batch was canceled before dispatch (:func:`cancel`); the entries are
  released as by ``failed``, with no event, since no payout system was told of the payout.

A payout request asks for the money available when it is made. A batch freezes the money
available when it is prepared, and names the affiliate's open request, made before, as the one
it pays (:func:`promise_open_request`); a request made while that payout is in flight asks for
money that came later, and only a later payout closes it. It had been closed by the payout in
flight, whose money was not its own, and left the Developer's queue unpaid.

Reports carry an ``Idempotency-Key``. The execution row is locked (``for_update``) before its
state is read, so two reports racing across server processes apply one after the other: the
first finishes the execution, the second is either its replay (same key and outcome: the stored
result, no new events) or a ``409 state_conflict``. A key names one report App-wide
(:class:`~refcore.models.payout.PayoutReportKey`): a key already spent on another execution is a
``409 idempotency_conflict``, and two reports racing to spend one key on two executions meet at
the store's unique key, whose loser runs again and is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import evolve, frozen

from refcore.errors import IdempotencyConflict, StateConflict, ValidationError
from refcore.models import CommissionEntry, EntryStatus, EventType, Program, ProgramAffiliate
from refcore.models.payout import (
    PayoutExecution,
    PayoutExecutionStatus,
    PayoutItem,
    PayoutReportKey,
    PayoutRequest,
    PayoutRequestStatus,
)
from refcore.payout_representation import represent_instructions
from refcore.representation import JsonObject, represent, represent_entry
from refcore.rules.payouts import payout_total
from refcore.services.payout_access import execution_for_live_key
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import exact_str, optional_text, require_choice, require_storable

MAX_IDEMPOTENCY_KEY = 255

#: The outcomes a report may set.
OUTCOMES = (PayoutExecutionStatus.SUCCEEDED, PayoutExecutionStatus.FAILED)


@frozen
class Reported:
    """The execution after a report, and whether this call was a replay of an earlier one."""

    execution: PayoutExecution
    replay: bool


def create_execution(
    tx: Tx,
    program: Program,
    affiliate: ProgramAffiliate,
    entries: Sequence[CommissionEntry],
    *,
    status: PayoutExecutionStatus,
    batch_id: str | None = None,
    manual: bool = False,
) -> tuple[PayoutExecution, list[PayoutItem]]:
    """Record a payout of ``entries`` (all of them, in ID order) and freeze them with items.

    The entries' payments and balance rows are locked first, in the store's order
    (:meth:`~refcore.ports.ledger.LedgerReads.lock_for_payout`). Adding an item whose entry is
    already in a live or paid payout raises ``ConcurrentWrite`` from the store's unique key on
    ``active_entry_id``; the unit of work then runs again and sees the entry as taken.

    Errors: ``state_conflict`` (the entries sum to nothing positive).
    """
    amount = payout_total(entries)
    if amount <= 0:
        raise StateConflict("Nothing to pay: the affiliate's available balance is not positive")
    tx.uow.ledger().lock_for_payout([entry.id for entry in entries])
    finished = not status.live
    execution = PayoutExecution(
        id=tx.new_id("pex"),
        app_id=program.app_id,
        program_id=program.id,
        program_affiliate_id=affiliate.id,
        amount=amount,
        currency=program.currency,
        status=status,
        created_at=tx.now,
        batch_id=batch_id,
        completed_at=tx.now if finished else None,
        completed_manually=manual,
        live_program_affiliate_id=None if finished else affiliate.id,
    )
    tx.uow.payout_executions.add(execution)
    ordered = sorted(entries, key=lambda e: e.id)
    items = [
        PayoutItem(
            id=id,
            app_id=program.app_id,
            execution_id=execution.id,
            entry_id=entry.id,
            program_affiliate_id=affiliate.id,
            amount=entry.amount,
            created_at=tx.now,
            active_entry_id=entry.id,
        )
        for id, entry in zip(tx.new_ids("pit", len(ordered)), ordered, strict=True)
    ]
    tx.uow.payout_items.add_all(items)
    return execution, items


def record_success(tx: Tx, execution: PayoutExecution) -> None:
    """The effects of a succeeded execution (already stored as ``succeeded``)."""
    items = tx.uow.payout_items.find_all({"execution_id": execution.id})
    entries = {entry.id: entry for entry in tx.uow.ledger().entries([item.entry_id for item in items])}
    tx.emit_each(
        EventType.COMMISSION_PAID,
        app_id=execution.app_id,
        livemode=True,
        data=[represent_entry(entries[item.entry_id], EntryStatus.PAID) for item in items],
    )
    tx.emit(EventType.PAYOUT_SUCCEEDED, app_id=execution.app_id, livemode=True, data=represent(execution))
    # A request is made under its affiliate's row lock, from its read of the balance to its
    # commit. Taking that lock here first makes this payout wait for a request being made, so
    # that it finds and closes it; and a request made after waits for this payout and finds
    # the money paid. Without it, on PostgreSQL each missed the other's uncommitted row, and
    # the request stayed open for a balance already paid.
    request = _open_request_locked(tx, execution.program_affiliate_id)
    # A batch's payout closes the request it was prepared to pay; mark-paid's own payout
    # (no batch) pays everything available under the same lock, so any request not promised
    # to a payout still in flight.
    if request is None:
        return
    promised_here = request.payout_execution_id == execution.id
    unpromised_and_mark_paid = request.payout_execution_id is None and execution.batch_id is None
    if promised_here or unpromised_and_mark_paid:
        tx.uow.payout_requests.replace(
            evolve(
                request,
                status=PayoutRequestStatus.PAID,
                decided_at=tx.now,
                payout_execution_id=execution.id,
                open_program_affiliate_id=None,
            )
        )


def _open_request_locked(tx: Tx, program_affiliate_id: str) -> PayoutRequest | None:
    """The affiliate's open payout request, read under the affiliate's row lock (which a request
    holds while it is made) and its own."""
    tx.uow.program_affiliates.get(program_affiliate_id, for_update=True)
    return tx.uow.payout_requests.find_one(
        {"open_program_affiliate_id": program_affiliate_id}, for_update=True
    )


def promise_open_request(tx: Tx, execution: PayoutExecution) -> None:
    """Name ``execution`` (just prepared) as the payout of the affiliate's open request, if any.

    The request was made before the batch, so the batch froze its money: this payout's success
    closes it (:func:`record_success`), its failure leaves it open for the next. Under the
    affiliate's row lock, so that a request being made either commits first and is named here,
    or waits and then asks only for what the batch left available."""
    request = _open_request_locked(tx, execution.program_affiliate_id)
    if request is not None and request.payout_execution_id is None:
        tx.uow.payout_requests.replace(evolve(request, payout_execution_id=execution.id))


def _release_promised_request(tx: Tx, execution: PayoutExecution) -> None:
    """A failed or canceled payout's request stays open, promised to no payout, for the next one to pay."""
    request = tx.uow.payout_requests.find_one(
        {"open_program_affiliate_id": execution.program_affiliate_id}, for_update=True
    )
    if request is not None and request.payout_execution_id == execution.id:
        tx.uow.payout_requests.replace(evolve(request, payout_execution_id=None))


def complete(
    tx: Tx,
    execution: PayoutExecution,
    *,
    idempotency_key: str | None,
    manual: bool,
    reason: str | None = None,
) -> PayoutExecution:
    """``ready`` → ``succeeded``; the caller holds the execution's row lock."""
    assert execution.status is PayoutExecutionStatus.READY
    done = evolve(
        execution,
        status=PayoutExecutionStatus.SUCCEEDED,
        completed_at=tx.now,
        idempotency_key=idempotency_key,
        completed_manually=manual,
        outcome_reason=reason,
        live_program_affiliate_id=None,
    )
    tx.uow.payout_executions.replace(done)
    record_success(tx, done)
    return done


def fail(tx: Tx, execution: PayoutExecution, *, idempotency_key: str, reason: str | None) -> PayoutExecution:
    """``ready`` → ``failed``: release every entry for a later payout."""
    assert execution.status is PayoutExecutionStatus.READY
    done = evolve(
        execution,
        status=PayoutExecutionStatus.FAILED,
        completed_at=tx.now,
        idempotency_key=idempotency_key,
        outcome_reason=reason,
        live_program_affiliate_id=None,
    )
    tx.uow.payout_executions.replace(done)
    _release(tx, done)
    tx.emit(EventType.PAYOUT_FAILED, app_id=execution.app_id, livemode=True, data=represent(done))
    return done


def cancel(tx: Tx, execution: PayoutExecution) -> PayoutExecution:
    """``prepared`` → ``canceled``, with its batch: release every entry, as :func:`fail` does.

    No event: ``payout.ready`` was never sent, so no payout system knows of the payout."""
    assert execution.status is PayoutExecutionStatus.PREPARED
    done = evolve(
        execution, status=PayoutExecutionStatus.CANCELED, completed_at=tx.now, live_program_affiliate_id=None
    )
    tx.uow.payout_executions.replace(done)
    _release(tx, done)
    return done


def _release(tx: Tx, execution: PayoutExecution) -> None:
    """The entries of a payout that will not be paid become available for a later one, and the
    payout request it was to pay stays open for that payout."""
    items = tx.uow.payout_items.find_all({"execution_id": execution.id})
    tx.uow.ledger().lock_for_payout([item.entry_id for item in items])
    tx.uow.payout_items.update_where({"execution_id": execution.id}, {"active_entry_id": None})
    _release_promised_request(tx, execution)


def require_idempotency_key(value: object) -> str:
    """The ``Idempotency-Key`` of a payout report, required because it is what tells a retried report
    (answered as a replay) from a second, conflicting one.

    Errors: ``validation_error`` (missing, blank, over 255 characters, or holding what no store
    can keep: a NUL, a lone surrogate, which the memory store and SQLite had recorded as the
    payout's report and PostgreSQL refused without naming the key, probe AD)."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("The Idempotency-Key header is required", param="Idempotency-Key")
    key = exact_str(value)
    if len(key) > MAX_IDEMPOTENCY_KEY:
        raise ValidationError(
            f"Idempotency-Key must be at most {MAX_IDEMPOTENCY_KEY} characters", param="Idempotency-Key"
        )
    require_storable(key, param="Idempotency-Key")
    return key


def report_outcome(
    rt: Runtime,
    principal: Principal,
    execution_id: str,
    outcome: PayoutExecutionStatus,
    *,
    idempotency_key: object,
    reason: object = None,
) -> Reported:
    """``POST /v1/payout-executions/:id/succeeded|failed``.

    The execution must be ``ready`` (its batch dispatched); the same key and outcome again is a replay
    (``replay=True``, no new events).

    Errors: ``validation_error`` (``outcome``, ``reason``, ``Idempotency-Key``),
    ``payout_execution_not_found``, ``live_key_required``, ``state_conflict`` (already settled, other
    than by this very report; canceled; or not dispatched yet), ``idempotency_conflict`` (the key already
    reported another execution of the App)."""
    # The member, not merely an equal string: a library caller's "succeeded" passed the check
    # below (a StrEnum equals its value), then failed the identity test that tells success from
    # failure, and the payout was recorded as failed, its money payable again (probe L).
    outcome = require_choice(outcome, PayoutExecutionStatus, param="outcome")
    if outcome not in OUTCOMES:
        raise ValidationError("outcome must be succeeded or failed", param="outcome")
    note = optional_text(reason, param="reason", max_length=1000)

    def work(tx: Tx) -> Reported:
        execution = execution_for_live_key(tx, principal, execution_id, for_update=True)
        key = require_idempotency_key(idempotency_key)  # after the lookup: a foreign ID is 404
        if execution.status in OUTCOMES:
            if execution.idempotency_key == key and execution.status is outcome:
                return Reported(execution, replay=True)
            raise StateConflict(
                f"Payout execution {execution.id} is already {execution.status.value}",
                param="Idempotency-Key" if execution.status is outcome else None,
            )
        if execution.status is PayoutExecutionStatus.CANCELED:
            raise StateConflict(f"Payout execution {execution.id} was canceled with its batch")
        _refuse_spent_key(tx, execution, key)
        if execution.status is not PayoutExecutionStatus.READY:
            raise StateConflict(
                f"Payout execution {execution.id} is {execution.status.value}; dispatch its batch first"
            )
        if outcome is PayoutExecutionStatus.SUCCEEDED:
            done = complete(tx, execution, idempotency_key=key, manual=False, reason=note)
        else:
            done = fail(tx, execution, idempotency_key=key, reason=note)
        tx.uow.payout_report_keys.add(
            PayoutReportKey(id=execution.id, app_id=execution.app_id, idempotency_key=key, created_at=tx.now)
        )
        return Reported(done, replay=False)

    return rt.transaction(work)


def _refuse_spent_key(tx: Tx, execution: PayoutExecution, key: str) -> None:
    """``idempotency_conflict`` when ``key`` already reported another of the App's executions.

    Taken as a new report, a recycled key would settle this payout too, and the key would no
    longer tell the App's reports apart: a retry of either could not be recognised as one."""
    spent = tx.uow.payout_report_keys.find_one({"app_id": execution.app_id, "idempotency_key": key})
    if spent is not None:
        raise IdempotencyConflict(
            f"This Idempotency-Key already reported payout execution {spent.id}; "
            "send a new key for each report",
            param="Idempotency-Key",
        )


def get_instructions(rt: Runtime, principal: Principal, execution_id: str) -> JsonObject:
    """``GET /v1/payout-executions/:id``: the execution with whom and where to pay.

    Errors: ``payout_execution_not_found``, ``live_key_required``."""

    def work(tx: Tx) -> JsonObject:
        execution = execution_for_live_key(tx, principal, execution_id)
        affiliate = tx.uow.program_affiliates.get(execution.program_affiliate_id)
        assert affiliate is not None
        details = tx.uow.payout_details.find_one({"program_affiliate_id": affiliate.id})
        items = tx.uow.payout_items.find_all({"execution_id": execution.id})
        return represent_instructions(execution, affiliate, details, [i.entry_id for i in items])

    return rt.read(work)
