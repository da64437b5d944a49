"""The public representation of payout objects (API responses and ``payout.*`` event data alike).

Registered on :func:`refcore.representation.represent`, so ``represent(execution)`` works like
for every other model once this module is imported (``refcore.services.payouts`` imports it).
Payouts are Live only: every payout object carries ``livemode: true``. An execution's snapshot
never carries payout instructions (where to send the money); those are only in
:func:`represent_instructions`, shown to a Live App key of the execution's App.
"""

from __future__ import annotations

from refcore.models import ProgramAffiliate
from refcore.models.payout import (
    PayoutBatch,
    PayoutDetails,
    PayoutExecution,
    PayoutRequest,
)
from refcore.representation import JsonObject, represent, timestamp
from refcore.rules.entry_status import Balance


@represent.register
def _payout_details(obj: PayoutDetails) -> JsonObject:
    return {
        "id": obj.id,
        "object": "payout_details",
        "created_at": timestamp(obj.created_at),
        "updated_at": timestamp(obj.updated_at),
        "program_id": obj.program_id,
        "program_affiliate_id": obj.program_affiliate_id,
        "method": obj.method.value,
        "email": obj.email,
        "account_holder": obj.account_holder,
        "iban": obj.iban,
        "notes": obj.notes,
    }


@represent.register
def _payout_request(obj: PayoutRequest) -> JsonObject:
    return {
        "id": obj.id,
        "object": "payout_request",
        "created_at": timestamp(obj.created_at),
        "livemode": True,
        "program_id": obj.program_id,
        "program_affiliate_id": obj.program_affiliate_id,
        "amount": obj.amount,
        "currency": obj.currency,
        "status": obj.status.value,
        "decided_at": timestamp(obj.decided_at),
        "payout_execution_id": obj.payout_execution_id,
    }


@represent.register
def _payout_batch(obj: PayoutBatch) -> JsonObject:
    return {
        "id": obj.id,
        "object": "payout_batch",
        "created_at": timestamp(obj.created_at),
        "livemode": True,
        "program_id": obj.program_id,
        "status": obj.status.value,
        "total": obj.total,
        "currency": obj.currency,
        "execution_count": obj.execution_count,
        "dispatched_at": timestamp(obj.dispatched_at),
        "canceled_at": timestamp(obj.canceled_at),
    }


@represent.register
def _payout_execution(obj: PayoutExecution) -> JsonObject:
    return {
        "id": obj.id,
        "object": "payout_execution",
        "created_at": timestamp(obj.created_at),
        "livemode": True,
        "program_id": obj.program_id,
        "program_affiliate_id": obj.program_affiliate_id,
        "batch_id": obj.batch_id,
        "amount": obj.amount,
        "currency": obj.currency,
        "status": obj.status.value,
        "completed_at": timestamp(obj.completed_at),
        "completed_manually": obj.completed_manually,
        "outcome_reason": obj.outcome_reason,
    }


def represent_batch_with_executions(batch: PayoutBatch, executions: list[PayoutExecution]) -> JsonObject:
    return {**represent(batch), "executions": [represent(e) for e in executions]}


def represent_balance(
    program_id: str, program_affiliate_id: str, currency: str, balance: Balance
) -> JsonObject:
    """The payout balance (decisions 10); computed, so it has no ID or creation time of its own."""
    return {
        "object": "payout_balance",
        "livemode": True,
        "program_id": program_id,
        "program_affiliate_id": program_affiliate_id,
        "currency": currency,
        "pending": balance.pending,
        "held": balance.held,
        "available": balance.available,
        "processing": balance.processing,
        "paid": balance.paid,
    }


def represent_ready_payout(
    affiliate: ProgramAffiliate,
    amount: int,
    currency: str,
    execution: PayoutExecution | None,
    details: PayoutDetails | None,
) -> JsonObject:
    """One row of the ready payouts: a view of the affiliate, not a stored object.

    It carries the ``id`` and ``created_at`` every object carries (decisions 10): the affiliate's,
    which are what the list pages by (``starting_after`` is this ``id``) and sorts by, newest
    affiliate first, and ``id`` is mark-paid's path segment. Without them a client paging every
    list by ``data[-1].id`` could not page this one (probe AL)."""
    return {
        "id": affiliate.id,
        "object": "ready_payout",
        "created_at": timestamp(affiliate.created_at),
        "livemode": True,
        "program_affiliate_id": affiliate.id,
        "program_id": affiliate.program_id,
        "email": affiliate.email,
        "name": affiliate.name,
        "amount": amount,
        "currency": currency,
        "payout_execution_id": execution.id if execution else None,
        "payout_details": _details_fields(details),
    }


def represent_instructions(
    execution: PayoutExecution,
    affiliate: ProgramAffiliate,
    details: PayoutDetails | None,
    entry_ids: list[str],
) -> JsonObject:
    """What the App's payout system needs to pay: the execution plus whom and where to pay."""
    return {
        **represent(execution),
        "commission_entry_ids": entry_ids,
        "instructions": {
            "program_affiliate_id": affiliate.id,
            "email": affiliate.email,
            "name": affiliate.name,
            "amount": execution.amount,
            "currency": execution.currency,
            "payout_details": _details_fields(details),
        },
    }


def _details_fields(details: PayoutDetails | None) -> JsonObject | None:
    if details is None:
        return None
    return {
        "method": details.method.value,
        "email": details.email,
        "account_holder": details.account_holder,
        "iban": details.iban,
        "notes": details.notes,
    }
