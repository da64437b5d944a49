"""Which commission entries are paid or frozen in a payout, derived from payout items.

The ledger never records payment: an entry is ``paid`` when an item of a ``succeeded``
execution holds it, and ``processing`` (frozen, neither available nor paid) while an item of a
``prepared`` or ``ready`` execution holds it. Items of failed executions hold nothing
(``active_entry_id`` is ``None``), so their entries are available again.
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

from refcore.models import CommissionEntry, Mode, Payment
from refcore.models.payout import PayoutExecutionStatus, PayoutItem
from refcore.rules.entry_status import Balance
from refcore.rules.payouts import payable_entries
from refcore.services.ledger import status_of
from refcore.services.runtime import Tx


@frozen
class PayoutStates:
    paid: frozenset[str] = frozenset()
    processing: frozenset[str] = frozenset()


def active_items_of(tx: Tx, program_affiliate_id: str) -> list[PayoutItem]:
    """The affiliate's items that still hold their entry (live or succeeded payouts)."""
    items = tx.uow.payout_items.find_all({"program_affiliate_id": program_affiliate_id})
    return [item for item in items if item.active_entry_id is not None]


def payout_states(tx: Tx, entries: Iterable[CommissionEntry]) -> PayoutStates:
    """Paid and frozen entry IDs among ``entries`` (read per affiliate: one query for its items)."""
    wanted = {entry.id for entry in entries}
    affiliates = {entry.program_affiliate_id for entry in entries}
    paid: set[str] = set()
    processing: set[str] = set()
    statuses: dict[str, PayoutExecutionStatus | None] = {}
    for affiliate_id in affiliates:
        for item in active_items_of(tx, affiliate_id):
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


@frozen
class Funds:
    """An affiliate's Live balance and the entries a payout would take now (``payable``).

    Both come from the same derived statuses, so ``sum(payable) == balance.available`` always.
    """

    balance: Balance
    payable: list[CommissionEntry]


def funds_of(tx: Tx, program_affiliate_id: str) -> Funds:
    """The affiliate's Live balance and the entries a payout would take now, derived entry by entry: a
    payout needs the entries themselves, which the aggregate read of
    :func:`refcore.services.balances.live_balance` does not give."""
    entries = tx.uow.commission_entries.find_all(
        {"program_affiliate_id": program_affiliate_id, "mode": Mode.LIVE}
    )
    payments: dict[str, Payment | None] = {}
    for entry in entries:
        if entry.transaction_id not in payments:
            payments[entry.transaction_id] = tx.uow.payments.get(entry.transaction_id)
    states = payout_states(tx, entries)
    statuses = [
        (
            entry,
            status_of(
                entry,
                payments[entry.transaction_id],
                now=tx.now,
                paid=entry.id in states.paid,
                processing=entry.id in states.processing,
            ),
        )
        for entry in entries
    ]
    balance = Balance()
    for entry, status in statuses:
        balance = balance.add(status, entry.amount)
    return Funds(balance=balance, payable=payable_entries(statuses))
