"""One repository shape for every model.

Queries are equality filters over model field names, which every store can answer from an
index. Ordering is by ID, and IDs are time-ordered, so "newest first" is "highest ID first".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

M = TypeVar("M")


class Repository(Protocol[M]):
    def add(self, item: M) -> None:
        """Stage a new record. A unique-key clash raises :class:`refcore.errors.ConcurrentWrite`
        (at once or at commit), and the service retries its unit of work."""
        ...

    def add_all(self, items: Sequence[M]) -> None:
        """Stage several new records at once, as ``add`` does each (one statement for them all
        where the store can: many captures recorded together cost one insert, not one each)."""
        ...

    def get(self, id: str, *, for_update: bool = False) -> M | None:
        """The record with this ID. ``for_update`` locks it until the unit of work ends, so that
        concurrent writers to the same record (refunds on one payment) run one after another.
        An ``id`` that is not a ``str`` (a library caller's list, number or ``None``) finds
        nothing, on every store, so the service answers ``NotFound`` as for an unknown ID."""
        ...

    def find_one(self, where: Mapping[str, object], *, for_update: bool = False) -> M | None:
        """The single record matching every ``field == value`` pair, or ``None``."""
        ...

    def find_all(self, where: Mapping[str, object]) -> list[M]:
        """Every matching record, oldest first."""
        ...

    def page(self, where: Mapping[str, object], *, limit: int, before: str | None) -> list[M]:
        """Up to ``limit`` matching records with ``id < before`` (all when ``None``), newest first."""
        ...

    def replace(self, item: M) -> None:
        """Store a new version of an existing record (same ID). Not offered for ledger entries,
        whose repository refuses it: the ledger is append-only."""
        ...

    def update_where(self, where: Mapping[str, object], changes: Mapping[str, object]) -> int:
        """Set the fields of ``changes`` on every record matching ``where``, in one statement
        where the store can, and answer how many matched. For changes that are the same for
        every record (a canceled payout releasing its thousand entries), where ``replace``
        would write each record in a statement of its own. Append-only repositories refuse it;
        a unique-key clash raises :class:`refcore.errors.ConcurrentWrite` as ``replace`` does."""
        ...
