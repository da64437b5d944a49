"""Ready payouts, their CSV export, payout batches and mark-paid (decisions 5; interface 3.2, 4.5).

**Ready payout**, one per affiliate of a program at most:

- the affiliate's ``ready`` execution (dispatched, not yet reported), if there is one: a payout
  whose ``payout.ready`` went unanswered must stay visible to the CSV export and mark-paid
  (interface 6.5 step 6);
- otherwise the affiliate's available balance, when it is positive and reaches the program's
  ``minimum_payout``.

A payout takes all of the affiliate's available entries (positive and negative) and pays their
sum, so negative nets carry forward and the balance left behind is exactly 0.

**Batch**: one execution per ready affiliate without a payout in flight, ``prepared`` (entries
frozen) until ``dispatch`` makes them ``ready`` and emits one ``payout.ready`` each.

**Mark-paid** completes the affiliate's ``ready`` execution, or records a new execution of the
current available entries as succeeded at once; either way ``payout.succeeded`` names it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping

from attrs import evolve, frozen

from refcore import payout_representation as _registers_payout_representations  # noqa: F401
from refcore.errors import ConcurrentWrite, NotFound, StateConflict, ValidationError
from refcore.identifiers import prefix_of
from refcore.models import EventType, Program, ProgramAffiliate
from refcore.models.payout import (
    PayoutBatch,
    PayoutBatchStatus,
    PayoutDetails,
    PayoutExecution,
    PayoutExecutionStatus,
)
from refcore.ports.lookups import Lookup
from refcore.representation import represent
from refcore.rules.payouts import csv_cell, is_ready, payout_total
from refcore.services.balances import live_balance_at, live_balances
from refcore.services.pagination import Page, not_of_this_list, paginate, require_limit
from refcore.services.payout_access import operator_program, require_live, require_operator_kind
from refcore.services.payout_executions import (
    cancel,
    complete,
    create_execution,
    promise_open_request,
    record_success,
)
from refcore.services.payout_state import funds_of
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import require_int, require_text

#: CSV header: the columns decisions 11 fixes first, then the payout details.
CSV_COLUMNS = (
    "program_affiliate_id",
    "email",
    "name",
    "amount",
    "currency",
    "payout_method",
    "payout_email",
    "payout_account_holder",
    "payout_iban",
    "payout_notes",
    "payout_execution_id",
)


@frozen
class ReadyPayout:
    affiliate: ProgramAffiliate
    amount: int
    currency: str
    #: The dispatched execution awaiting its outcome, or ``None`` for an available balance.
    execution: PayoutExecution | None
    details: PayoutDetails | None


# -- ready payouts ---------------------------------------------------------------------------


def _payout_in_flight(tx: Tx, affiliate: ProgramAffiliate) -> PayoutExecution | None:
    """The affiliate's prepared or ready payout: one at most, by the unique key on
    ``live_program_affiliate_id`` (docs/payouts.md)."""
    return tx.uow.payout_executions.find_one({"live_program_affiliate_id": affiliate.id})


def _ready_payouts_of(tx: Tx, program: Program, affiliates: list[ProgramAffiliate]) -> list[ReadyPayout]:
    """The ready payouts of these affiliates, in their order: each one's dispatched (``ready``)
    execution, or, with no payout in flight, its available balance when that reaches the
    program's minimum.

    An affiliate whose payout waits in a *prepared* batch has none: neither mark-paid nor another
    batch can pay it until that batch is dispatched, and the list and the CSV had shown the money
    earned since as a payout that no one could then record (the frozen one appeared nowhere).

    The balances come from the payout balance's aggregate read, all of them in one call to the
    store, not from funds_of, which loads the entries a payout would take: a page of ready
    payouts had read entries for every affiliate (0.5 s at 10 thousand entries, 3.9 s at 100
    thousand, when funds_of still loaded all of them). The contract suite holds the two to the
    same sums."""
    in_flight, details = _payouts_and_details_of(tx, affiliates)
    balances = live_balances(tx, [a.id for a in affiliates if a.id not in in_flight])
    found: list[ReadyPayout] = []
    for affiliate in affiliates:
        execution = in_flight.get(affiliate.id)
        if execution is not None and execution.status is not PayoutExecutionStatus.READY:
            continue
        if execution is not None:
            amount, currency = execution.amount, execution.currency
        else:
            amount, currency = balances[affiliate.id].available, program.currency
            if not is_ready(amount, program.minimum_payout):
                continue
        found.append(ReadyPayout(affiliate, amount, currency, execution, details.get(affiliate.id)))
    return found


#: Affiliates whose payout in flight and payout details one lookup call reads: two joins each,
#: well inside SQLite's 64 tables a statement, and a whole default page (10) in one call.
_LOOKED_UP_TOGETHER = 16


def _payouts_and_details_of(
    tx: Tx, affiliates: list[ProgramAffiliate], *, with_details: bool = True
) -> tuple[dict[str, PayoutExecution], dict[str, PayoutDetails]]:
    """Each affiliate's payout in flight (:func:`_payout_in_flight`) and payout details (none
    read without ``with_details``), by affiliate ID, read :data:`_LOOKED_UP_TOGETHER` affiliates
    a statement. Read one by one, a page of ten ready payouts had made twenty statements for
    them: on PostgreSQL twenty round trips, most of the page's 5.5 ms in-process
    (``bench/history.md``, fortieth session)."""
    in_flight: dict[str, PayoutExecution] = {}
    details: dict[str, PayoutDetails] = {}
    for start in range(0, len(affiliates), _LOOKED_UP_TOGETHER):
        chunk = affiliates[start : start + _LOOKED_UP_TOGETHER]
        executions_of = {
            a.id: Lookup("payout_executions", PayoutExecution, {"live_program_affiliate_id": a.id})
            for a in chunk
        }
        details_of = {
            a.id: Lookup("payout_details", PayoutDetails, {"program_affiliate_id": a.id})
            for a in chunk
            if with_details
        }
        found = tx.uow.look_up(*executions_of.values(), *details_of.values())
        for affiliate_id, execution_lookup in executions_of.items():
            if (execution := found[execution_lookup]) is not None:
                in_flight[affiliate_id] = execution
        for affiliate_id, details_lookup in details_of.items():
            if (saved := found[details_lookup]) is not None:
                details[affiliate_id] = saved
    return in_flight, details


def _lock_before_funds(tx: Tx, affiliate: ProgramAffiliate) -> None:
    """Take the affiliate's row lock before reading the funds a new payout will take.

    A payout request is made under this lock, from its read of the balance to its commit, and a
    payout closes (mark-paid) or is promised (a batch) the affiliate's open request. Had the
    payout read the funds first and locked only when it looked for the request, a request made
    in between, for money that arrived after the payout's read, was found and closed as paid by
    a payout that did not carry all of it: found by a probe on three PostgreSQL processes, a
    request for 1,500 closed by a payout of 1,000. Under the lock, either the request commits
    first and the payout's read includes its money, or it waits and then asks only for what the
    payout left. Only this path locks the affiliate first: a report locks its execution and then
    the affiliate, so completing a dispatched payout keeps that order.

    The payout then reads its funds at its own moment, which :func:`_require_what_the_request_counted`
    checks against a request made after that moment."""
    tx.uow.program_affiliates.get(affiliate.id, for_update=True)


def _require_what_the_request_counted(tx: Tx, affiliate: ProgramAffiliate, available: int) -> None:
    """Refuse a payout of ``available`` (read under the affiliate's lock at ``tx.now``) that
    would close or be promised an open request which counted more, or less.

    A payout reads the funds at its unit of work's moment, fixed when the work began, and a
    request made after that moment (while a batch of many affiliates was still on its way to
    this one) counted what had become available by its own, later moment. The payout had left
    that money out and still closed the request as paid: a request for 5,000 paid by a payout
    of 2,000, 3,000 left available (probe P, on three PostgreSQL processes, 14 times in five
    runs). The unit of work then runs again (:class:`~refcore.errors.ConcurrentWrite`), at a
    moment after the request's, and pays all the request counted.

    Only when the available balance at the request's moment differs from the payout's: a retry
    re-runs a whole batch, and refusing every request made meanwhile had made batches of 600
    ready affiliates run out of retries under 47 requests a second (probe P2), though nothing
    had become available in between."""
    request = tx.uow.payout_requests.find_one({"open_program_affiliate_id": affiliate.id})
    if request is None or request.created_at <= tx.now:
        return
    if live_balance_at(tx, affiliate.id, request.created_at).available != available:
        raise ConcurrentWrite(
            f"Program affiliate {affiliate.id}'s payout request counted money that became available "
            "after this payout began; run the work again"
        )


def _ready_payouts_in(
    tx: Tx, program: Program, *, before: str | None = None, wanted: int | None = None
) -> list[ReadyPayout]:
    """The program's ready payouts, newest affiliate first: of the affiliates older than
    ``before`` (a cursor), and no more than ``wanted`` (a page and one more, to tell has_more).
    A page reads as many affiliates as it still lacks rows for, by the (program, ID) index, and
    more only when some of those were not ready: it had read every affiliate of the program
    first, whatever the page's size."""
    where = {"program_id": program.id}
    if wanted is None:
        return _ready_payouts_of(tx, program, list(reversed(tx.uow.program_affiliates.find_all(where))))
    found: list[ReadyPayout] = []
    while len(found) < wanted:
        lacking = wanted - len(found)
        affiliates = tx.uow.program_affiliates.page(where, limit=lacking, before=before)
        found += _ready_payouts_of(tx, program, affiliates)
        if len(affiliates) < lacking:
            break  # the program has no older affiliate
        before = affiliates[-1].id
    return found


def list_ready_payouts(
    rt: Runtime,
    principal: Principal,
    program_id: str,
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[ReadyPayout]:
    """``GET /v1/ready-payouts?program_id=``; the cursor is a program affiliate ID.

    Errors: ``validation_error`` (``limit``), ``forbidden`` (an affiliate key), ``program_not_found``,
    ``live_key_required``, ``invalid_starting_after``."""
    size = require_limit(limit)

    def work(tx: Tx) -> Page[ReadyPayout]:
        program = operator_program(tx, principal, program_id)
        if starting_after is not None:
            cursor = (
                tx.uow.program_affiliates.get(starting_after) if prefix_of(starting_after) == "aff" else None
            )
            if cursor is None or cursor.program_id != program.id:
                raise not_of_this_list()
        rows = _ready_payouts_in(tx, program, before=starting_after, wanted=size + 1)
        return Page(data=rows[:size], has_more=len(rows) > size)

    # Payouts in flight and balances are separate statements: read at two moments, an affiliate
    # whose payout a batch took (or gave back) in between was left out of the page.
    return rt.read(work, snapshot=True)


def ready_payouts_csv(rt: Runtime, principal: Principal, program_id: str) -> str:
    """``POST /v1/ready-payouts/csv``: one row per ready payout, safe to open in a spreadsheet.

    Errors: ``forbidden`` (an affiliate key), ``program_not_found``, ``live_key_required``."""

    def work(tx: Tx) -> str:
        program = operator_program(tx, principal, program_id)
        return render_csv(_ready_payouts_in(tx, program))

    # Every row as of one moment, however many statements its thousands of affiliates take.
    return rt.read(work, snapshot=True)


def render_csv(rows: list[ReadyPayout]) -> str:
    """The CSV text of ``rows`` under :data:`CSV_COLUMNS`. Every text cell goes through
    :func:`refcore.rules.payouts.csv_cell`, because names and e-mails are affiliate input that a
    spreadsheet would otherwise run as a formula."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        d = row.details
        text = [
            row.affiliate.id,
            row.affiliate.email,
            row.affiliate.name,
        ]
        details = [
            d.method.value if d else "",
            (d.email or "") if d else "",
            (d.account_holder or "") if d else "",
            (d.iban or "") if d else "",
            (d.notes or "") if d else "",
            row.execution.id if row.execution else "",
        ]
        writer.writerow(
            [
                *(csv_cell(v) for v in text),
                row.amount,
                csv_cell(row.currency),
                *(csv_cell(v) for v in details),
            ]
        )
    return out.getvalue()


# -- mark-paid -------------------------------------------------------------------------------


#: The largest payout amount a store keeps (a signed 64-bit sum of entries, migration 0007).
MAX_PAYOUT_AMOUNT = 2**63 - 1


def mark_paid(
    rt: Runtime, principal: Principal, program_affiliate_id: str, *, amount: object = None
) -> PayoutExecution:
    """``POST /v1/ready-payouts/:programAffiliateId/mark-paid``.

    Completes the affiliate's dispatched (``ready``) payout, or else records a payout of its whole
    available balance as succeeded at once; either way each entry's ``commission.paid`` and
    ``payout.succeeded`` are emitted, and an open payout request it pays is closed.

    ``amount``, when given, is the amount the operator paid (the ready payout they saw): the
    payout is recorded only if it is exactly that, else ``state_conflict`` and nothing changes.
    Mark-paid names only the affiliate, so without it money that became available after the
    operator looked (or after a timed-out mark-paid had already recorded the payout, on a retry)
    is recorded as paid though nobody sent it.

    Errors: ``validation_error`` (``amount``), ``forbidden`` (an affiliate key),
    ``program_affiliate_not_found``, ``live_key_required``, ``state_conflict`` (a payout waiting in
    a prepared batch, no ready payout, or one of another amount)."""
    require_operator_kind(principal)
    expected = (
        None if amount is None else require_int(amount, param="amount", minimum=1, maximum=MAX_PAYOUT_AMOUNT)
    )

    def work(tx: Tx) -> PayoutExecution:
        affiliate = tx.uow.program_affiliates.get(program_affiliate_id)
        if affiliate is None:
            raise NotFound.of("program_affiliate", program_affiliate_id)
        program = operator_program(
            tx, principal, affiliate.program_id, as_resource=("program_affiliate", program_affiliate_id)
        )
        ready = {"program_affiliate_id": affiliate.id, "status": PayoutExecutionStatus.READY}
        for execution in _locked_executions(tx, ready):
            # Looked at again once locked: a concurrent report may have settled it meanwhile.
            if execution.status is PayoutExecutionStatus.READY:
                _require_expected_amount(affiliate, execution.amount, expected)
                return complete(tx, execution, idempotency_key=None, manual=True)
        _lock_before_funds(tx, affiliate)
        prepared = _payout_in_flight(tx, affiliate)
        if prepared is not None:
            # One payout in flight per affiliate (docs/payouts.md): a payout of the money that
            # came after the batch had been recorded beside the prepared one, two at once.
            raise StateConflict(
                f"Program affiliate {affiliate.id} has a payout in the prepared batch "
                f"{prepared.batch_id}; dispatch the batch and mark that payout paid, or cancel the batch"
            )
        funds = funds_of(tx, affiliate.id)
        if not is_ready(funds.available, program.minimum_payout):
            raise StateConflict(
                f"Program affiliate {affiliate.id} has no ready payout "
                f"(available {funds.available}, minimum {program.minimum_payout})"
            )
        _require_expected_amount(affiliate, funds.available, expected)
        _require_what_the_request_counted(tx, affiliate, funds.available)
        execution, _items = create_execution(
            tx, program, affiliate, funds.payable, status=PayoutExecutionStatus.SUCCEEDED, manual=True
        )
        record_success(tx, execution)
        return execution

    return rt.transaction(work)


def _require_expected_amount(affiliate: ProgramAffiliate, actual: int, expected: int | None) -> None:
    """Refuse a mark-paid whose ``amount`` is not the payout it would record (read under the
    locks the payout holds, so nothing can change it before the commit)."""
    if expected is not None and actual != expected:
        raise StateConflict(
            f"Program affiliate {affiliate.id}'s ready payout is {actual}, not {expected}; "
            "nothing was marked paid",
            param="amount",
        )


# -- batches ---------------------------------------------------------------------------------


def prepare_batch(rt: Runtime, principal: Principal, program_id: object) -> PayoutBatch:
    """``POST /v1/payout-batches {program_id}``: freeze the current ready payouts.

    Errors: ``validation_error`` (``program_id``), ``forbidden`` (an affiliate key),
    ``program_not_found``, ``live_key_required``, ``state_conflict`` (no ready payouts)."""
    program_ref = require_text(program_id, param="program_id")

    def work(tx: Tx) -> PayoutBatch:
        program = operator_program(tx, principal, program_ref)
        plans = []
        for affiliate in _payable_now(tx, program):
            _lock_before_funds(tx, affiliate)
            if _payout_in_flight(tx, affiliate) is not None:
                # Look again under the lock, as mark-paid does: a batch that waited for another
                # batch's lock on this affiliate had planned a second payout beside the one that
                # batch had just made, which the one-in-flight key refused at insert; when that
                # payout was being completed meanwhile, the two waited on each other (a probe
                # on three PostgreSQL processes logged 1,341 deadlocks).
                continue
            funds = funds_of(tx, affiliate.id)
            if is_ready(funds.available, program.minimum_payout):
                _require_what_the_request_counted(tx, affiliate, funds.available)
                plans.append((affiliate, funds.payable))
        if not plans:
            raise StateConflict(f"Program {program.id} has no ready payouts to put in a batch")
        batch = PayoutBatch(
            id=tx.new_id("pbt"),
            app_id=program.app_id,
            program_id=program.id,
            status=PayoutBatchStatus.PREPARED,
            total=sum(payout_total(entries) for _, entries in plans),
            currency=program.currency,
            execution_count=len(plans),
            created_at=tx.now,
        )
        tx.uow.payout_batches.add(batch)
        for affiliate, entries in plans:
            execution, _items = create_execution(
                tx, program, affiliate, entries, status=PayoutExecutionStatus.PREPARED, batch_id=batch.id
            )
            promise_open_request(tx, execution)
        return batch

    return rt.transaction(work)


def _payable_now(tx: Tx, program: Program) -> list[ProgramAffiliate]:
    """The program's affiliates a batch would pay, as read before taking their locks: no payout
    in flight (one per affiliate: settle it first), and an available balance that reaches the
    program's minimum (the aggregate read: only these affiliates' entries are then loaded).

    Both are read for all the affiliates together (:func:`_payouts_and_details_of`,
    :func:`~refcore.services.balances.live_balances`); read one affiliate after another, a
    batch of a program of 2,000 affiliates had made 4,000 statements before taking its first
    lock, 2.3 s on PostgreSQL (``bench/history.md``, forty-first session)."""
    affiliates = tx.uow.program_affiliates.find_all({"program_id": program.id})
    in_flight, _no_details = _payouts_and_details_of(tx, affiliates, with_details=False)
    free = [affiliate for affiliate in affiliates if affiliate.id not in in_flight]
    balances = live_balances(tx, [affiliate.id for affiliate in free])
    return [a for a in free if is_ready(balances[a.id].available, program.minimum_payout)]


def _batch(tx: Tx, principal: Principal, batch_id: str, *, for_update: bool = False) -> PayoutBatch:
    require_operator_kind(principal)
    batch = tx.uow.payout_batches.get(batch_id, for_update=for_update)
    if batch is None:
        raise NotFound.of("payout_batch", batch_id)
    operator_program(tx, principal, batch.program_id, as_resource=("payout_batch", batch_id))
    return batch


@frozen
class BatchView:
    batch: PayoutBatch
    executions: list[PayoutExecution]


def get_batch(rt: Runtime, principal: Principal, batch_id: str) -> BatchView:
    """A payout batch with its executions (``GET /v1/payout-batches/:id``).

    Errors: ``forbidden`` (an affiliate key), ``payout_batch_not_found``, ``live_key_required``."""

    def work(tx: Tx) -> BatchView:
        batch = _batch(tx, principal, batch_id)
        return BatchView(batch, tx.uow.payout_executions.find_all({"batch_id": batch.id}))

    # The batch's status and its payouts' of one moment: never a prepared batch of ready payouts.
    return rt.read(work, snapshot=True)


def list_batches(
    rt: Runtime,
    principal: Principal,
    *,
    program_id: str | None = None,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[PayoutBatch]:
    """Sessions name the program; a Live App key lists its App's batches (optionally one program).

    ``GET /v1/payout-batches``. Errors: ``forbidden`` (an affiliate key), ``validation_error``
    (``limit``; a session naming no program), ``program_not_found``, ``live_key_required``,
    ``invalid_starting_after``."""
    require_operator_kind(principal)

    def work(tx: Tx) -> Page[PayoutBatch]:
        where: dict[str, object]
        if program_id is not None:
            program = operator_program(tx, principal, program_id)
            where = {"program_id": program.id}
        elif principal.is_app_key and principal.app_id is not None:
            require_live(principal)
            where = {"app_id": principal.app_id}
        else:
            raise ValidationError("program_id is required", param="program_id")
        return paginate(
            tx.uow.payout_batches, where, prefix="pbt", limit=limit, starting_after=starting_after
        )

    return rt.read(work)


def dispatch_batch(rt: Runtime, principal: Principal, batch_id: str) -> BatchView:
    """``POST /v1/payout-batches/:id/dispatch``: executions ``ready``, one ``payout.ready`` each.

    The event carries the execution snapshot only; the App's payout system fetches the
    instructions with its Live key (interface 6.5).

    Errors: ``forbidden`` (an affiliate key), ``payout_batch_not_found``, ``live_key_required``,
    ``state_conflict`` (already dispatched, or canceled).
    """

    def work(tx: Tx) -> BatchView:
        batch = _prepared_batch(tx, principal, batch_id)
        executions = []
        for execution in _locked_executions(tx, {"batch_id": batch.id}):
            if execution.status is PayoutExecutionStatus.PREPARED:
                execution = evolve(execution, status=PayoutExecutionStatus.READY)
                tx.uow.payout_executions.replace(execution)
                tx.emit(
                    EventType.PAYOUT_READY, app_id=execution.app_id, livemode=True, data=represent(execution)
                )
            executions.append(execution)
        batch = evolve(batch, status=PayoutBatchStatus.DISPATCHED, dispatched_at=tx.now)
        tx.uow.payout_batches.replace(batch)
        return BatchView(batch, executions)

    return rt.transaction(work)


def cancel_batch(rt: Runtime, principal: Principal, batch_id: str) -> BatchView:
    """``POST /v1/payout-batches/:id/cancel``: a prepared batch that must not go out gives its
    money back: each execution ``canceled``, its entries available again, its affiliate free
    for mark-paid or the next batch.

    Without it, the only way to release a batch prepared by mistake was to dispatch it, which
    sends ``payout.ready`` to the App's payout system, and then to report each payout failed.
    Nothing is emitted: the batch was never announced. A dispatched batch cannot be canceled;
    its payouts are settled one by one (report ``failed``, or mark-paid).

    Errors: ``forbidden`` (an affiliate key), ``payout_batch_not_found``, ``live_key_required``,
    ``state_conflict`` (dispatched, or already canceled).
    """

    def work(tx: Tx) -> BatchView:
        batch = _prepared_batch(tx, principal, batch_id)
        executions = [
            cancel(tx, execution) if execution.status is PayoutExecutionStatus.PREPARED else execution
            for execution in _locked_executions(tx, {"batch_id": batch.id})
        ]
        batch = evolve(batch, status=PayoutBatchStatus.CANCELED, canceled_at=tx.now)
        tx.uow.payout_batches.replace(batch)
        return BatchView(batch, executions)

    return rt.transaction(work)


def _prepared_batch(tx: Tx, principal: Principal, batch_id: str) -> PayoutBatch:
    """The batch, row-locked: its dispatch and its cancellation apply one after the other."""
    batch = _batch(tx, principal, batch_id, for_update=True)
    if batch.status is not PayoutBatchStatus.PREPARED:
        raise StateConflict(f"Payout batch {batch.id} is already {batch.status.value}")
    return batch


def _locked_executions(tx: Tx, where: Mapping[str, object]) -> list[PayoutExecution]:
    """The executions ``where`` finds, each row-locked and then read again, as a report locks
    it: what a caller then decides from is their state under the lock, not before it."""
    executions = []
    for candidate in tx.uow.payout_executions.find_all(where):
        execution = tx.uow.payout_executions.get(candidate.id, for_update=True)
        assert execution is not None
        executions.append(execution)
    return executions
