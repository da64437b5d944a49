"""Ledger reads that the store answers in one query, whatever the length of the history.

A balance sums an affiliate's entries by derived status (decisions 4, 5). Loading every entry,
its payment and its payout items into Python to derive each status one by one costs time in
proportion to the affiliate's whole history; a store can instead derive the status inside one
aggregate query, reading the entries through an index. The rule stays the core's
(:func:`refcore.rules.entry_status.entry_status`): the port returns the sums per status, with
this precedence, and the memory store computes them with that very function.

- ``paid``: held by a payout item of a ``succeeded`` execution;
- ``processing``: held by a payout item of a ``prepared`` or ``ready`` execution;
- ``held``: the entry is positive and its payment has an open dispute (``open_dispute_count > 0``;
  a reversal is never held: :mod:`refcore.rules.entry_status`);
- ``pending``: ``now < available_at``;
- ``approved``: everything else.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from attrs import frozen

from refcore.models import CommissionEntry, EntryStatus, Mode


@frozen
class EntryPayoutStates:
    """Among some entries: those in a succeeded payout, and those frozen in a live one."""

    paid: frozenset[str] = frozenset()
    processing: frozenset[str] = frozenset()


class LedgerReads(Protocol):
    """Aggregate ledger reads inside one unit of work (they see its own uncommitted writes)."""

    def status_sums(self, program_affiliate_id: str, mode: Mode, now: datetime) -> Mapping[EntryStatus, int]:
        """The sum of the affiliate's entries in ``mode`` per derived status at ``now``; every
        status is present (``0`` when no entry has it)."""
        ...

    def status_sums_of(
        self, program_affiliate_ids: Sequence[str], mode: Mode, now: datetime
    ) -> dict[str, Mapping[EntryStatus, int]]:
        """:meth:`status_sums` of each of these affiliates, keyed by ID: one call for a page of
        balances, so that a store can set up once what each read needs (PostgreSQL's plan mode,
        a round trip to set and one to put back, had been paid once an affiliate)."""
        ...

    def payout_states(self, entry_ids: Collection[str]) -> EntryPayoutStates:
        """Which of ``entry_ids`` are paid or processing, looked up by entry (not by affiliate),
        so that a page of entries costs the same however many payouts the affiliates had."""
        ...

    def entries(self, entry_ids: Collection[str]) -> list[CommissionEntry]:
        """The entries with these IDs (those that exist, each once), in ID order: one read for
        a succeeded payout's entries, which ``commission.paid`` events carry, where reading
        them one by one had cost a statement each (1,000 for a payout of 1,000 entries)."""
        ...

    def held_payments(self, payment_ids: Collection[str]) -> frozenset[str]:
        """Which of these payments (``txn_``) have an open dispute, so their entries are
        ``held``: one read for a page of entries instead of one per payment."""
        ...

    def unsettled_entries(self, program_affiliate_id: str, mode: Mode) -> list[CommissionEntry]:
        """The affiliate's entries in ``mode`` that no payout holds (neither paid nor frozen in
        a live one), in ID order: what a payout can take. A store reads them through its own
        index of held entries, so a payout of the last month's money does not load the years
        of entries already paid, one payment read each (0.73 s for mark-paid of an affiliate
        with 10,000 entries, SQLite)."""
        ...

    def lock_for_payout(self, entry_ids: Collection[str]) -> None:
        """Before a payout freezes or releases these entries (one affiliate's): take, in one
        fixed order, the locks that moving them in or out of the balance will take, so that the
        payout cannot deadlock with a refund or dispute of one of their payments.

        A store that keeps the balance in rows of its own (the SQL store's projection) locks
        those rows when each entry moves, after the entry's payment; a refund locks its payment
        first and those rows after. A payout moving several entries one by one held the rows
        from the first entry while it waited for the payment of the next, which a refund held
        while it waited for the rows: PostgreSQL broke each such cycle after a second
        (found by a probe on three processes). Taken first and in order (the payments, then the
        rows), the locks leave nothing to wait for in a cycle. A store whose writers run one
        at a time needs nothing here."""
        ...
