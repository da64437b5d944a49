"""Ledger reads for the in-memory store: the core's own status rule applied entry by entry.

The SQL store answers the same questions with one aggregate query; the contract suite checks
that both give the same sums as deriving every entry's status in the service layer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from refcore.models import CommissionEntry, EntryStatus, Mode
from refcore.models.payout import PayoutExecutionStatus, PayoutItem
from refcore.ports.ledger import EntryPayoutStates
from refcore.rules.entry_status import entry_status


class _Readable(Protocol):
    def get(self, id: str, *, for_update: bool = False) -> Any: ...
    def find_all(self, where: Mapping[str, object]) -> list[Any]: ...


class MemoryLedgerReads:
    """Implements :class:`refcore.ports.ledger.LedgerReads` over one memory unit of work."""

    def __init__(self, repositories: Mapping[str, _Readable]) -> None:
        self._repositories = repositories

    def unsettled_entries(self, program_affiliate_id: str, mode: Mode) -> list[CommissionEntry]:
        entries = self._repositories["commission_entries"].find_all(
            {"program_affiliate_id": program_affiliate_id, "mode": mode}
        )
        items = self._repositories["payout_items"].find_all({"program_affiliate_id": program_affiliate_id})
        held = {item.active_entry_id for item in items if item.active_entry_id is not None}
        return sorted((entry for entry in entries if entry.id not in held), key=lambda entry: entry.id)

    def lock_for_payout(self, entry_ids: Collection[str]) -> None:
        """Nothing to do: the memory store's units of work that write run one at a time."""

    def _execution_status(self, item: PayoutItem) -> PayoutExecutionStatus | None:
        execution = self._repositories["payout_executions"].get(item.execution_id)
        return None if execution is None else execution.status

    def _states_of(self, items: list[PayoutItem], wanted: Collection[str]) -> EntryPayoutStates:
        paid: set[str] = set()
        processing: set[str] = set()
        for item in items:
            if item.active_entry_id is None or item.entry_id not in wanted:
                continue
            status = self._execution_status(item)
            if status is PayoutExecutionStatus.SUCCEEDED:
                paid.add(item.entry_id)
            elif status is not None and status.live:
                processing.add(item.entry_id)
        return EntryPayoutStates(paid=frozenset(paid), processing=frozenset(processing))

    def status_sums(self, program_affiliate_id: str, mode: Mode, now: datetime) -> Mapping[EntryStatus, int]:
        entries: list[CommissionEntry] = self._repositories["commission_entries"].find_all(
            {"program_affiliate_id": program_affiliate_id, "mode": mode}
        )
        items = self._repositories["payout_items"].find_all({"program_affiliate_id": program_affiliate_id})
        states = self._states_of(items, {entry.id for entry in entries})
        sums = dict.fromkeys(EntryStatus, 0)
        payments = self._repositories["payments"]
        for entry in entries:
            payment = payments.get(entry.transaction_id)
            status = entry_status(
                entry,
                now=now,
                payment_held=payment is not None and payment.open_dispute_count > 0,
                paid=entry.id in states.paid,
                processing=entry.id in states.processing,
            )
            sums[status] += entry.amount
        return sums

    def status_sums_of(
        self, program_affiliate_ids: Sequence[str], mode: Mode, now: datetime
    ) -> dict[str, Mapping[EntryStatus, int]]:
        return {affiliate: self.status_sums(affiliate, mode, now) for affiliate in program_affiliate_ids}

    def payout_states(self, entry_ids: Collection[str]) -> EntryPayoutStates:
        wanted = set(entry_ids)
        items = [
            item
            for entry_id in wanted
            for item in self._repositories["payout_items"].find_all({"entry_id": entry_id})
        ]
        return self._states_of(items, wanted)

    def entries(self, entry_ids: Collection[str]) -> list[CommissionEntry]:
        repository = self._repositories["commission_entries"]
        found = (repository.get(entry_id) for entry_id in sorted(set(entry_ids)))
        return [entry for entry in found if entry is not None]

    def held_payments(self, payment_ids: Collection[str]) -> frozenset[str]:
        payments = self._repositories["payments"]
        found = (payments.get(payment_id) for payment_id in set(payment_ids))
        return frozenset(p.id for p in found if p is not None and p.open_dispute_count > 0)
