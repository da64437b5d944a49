"""Appending commission entries so that a payment's entries always meet the formula target.

Every change to a payment's refunds or lost disputes calls :func:`rebalance`, which appends at
most one entry: the difference between the target ``C - floor(C * (refunded + lost) / A)`` and
the current sum. Entries are never updated or deleted.
"""

from __future__ import annotations

from refcore.models import CommissionEntry, EntryKind, EventType, Payment
from refcore.representation import represent_entry
from refcore.rules.commission import adjustment, ledger_target
from refcore.rules.entry_status import entry_status
from refcore.services.runtime import Tx

_EVENT_OF_KIND = {
    EntryKind.EARNED: EventType.COMMISSION_CREATED,
    EntryKind.REINSTATEMENT: EventType.COMMISSION_CREATED,
    EntryKind.REVERSAL: EventType.COMMISSION_REVERSED,
}


def append_entry(tx: Tx, payment: Payment, kind: EntryKind, amount: int, source_id: str) -> CommissionEntry:
    """Append one commission entry of the (attributed) ``payment`` and emit its event in the same unit of
    work, so that an entry and its event commit together or not at all: ``commission.created`` for
    earned and reinstatement entries, ``commission.reversed`` for reversals."""
    assert payment.program_affiliate_id is not None and payment.program_id is not None
    entry = CommissionEntry(
        id=tx.new_id("com"),
        app_id=payment.app_id,
        mode=payment.mode,
        program_id=payment.program_id,
        program_affiliate_id=payment.program_affiliate_id,
        transaction_id=payment.id,
        source_id=source_id,
        kind=kind,
        amount=amount,
        currency=payment.currency,
        available_at=payment.available_at,
        created_at=tx.now,
    )
    tx.uow.commission_entries.add(entry)
    status = entry_status(entry, now=tx.now, payment_held=payment.open_dispute_count > 0, paid=False)
    tx.emit(
        _EVENT_OF_KIND[kind],
        app_id=payment.app_id,
        livemode=payment.mode.livemode,
        data=represent_entry(entry, status),
    )
    return entry


def rebalance(tx: Tx, before: Payment, payment: Payment, source_id: str) -> CommissionEntry | None:
    """Append the entry (if any) that brings the payment's entries to the formula target.

    ``before`` is the payment as it stood before this change and ``payment`` as it stands after.
    The entries met ``before``'s target already: every change to a payment's refunds and lost
    disputes rebalances in the unit of work that makes it, under the payment's lock. So that
    target is their current sum, and nothing needs to add them up. Adding them up cost as much as
    the payment had entries: its thousandth refund took three times the CPU of its first
    (bench/history.md, tenth session). The ledger state machine and the concurrency tests still
    check the sum itself after every step.
    """
    if payment.commission_amount == 0 or payment.program_affiliate_id is None:
        return None
    current = _target(before)
    step = adjustment(_target(payment), current)
    if step is None:
        return None
    kind, amount = step
    return append_entry(tx, payment, kind, amount, source_id)


def _target(payment: Payment) -> int:
    return ledger_target(
        payment.commission_amount, payment.amount, payment.refunded_amount, payment.lost_amount
    )
