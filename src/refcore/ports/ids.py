"""Identifier generation as a port: prefixed, time-ordered IDs (ID order is creation order)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class IdGenerator(Protocol):
    def new(self, prefix: str, at: datetime | None = None) -> str:
        """A fresh ID such as ``txn_01J…`` of the moment ``at`` (the ``created_at`` of the object it
        names; by default now): IDs of one prefix sort as their moments do, and those of one
        moment in the order they were made."""
        ...

    def new_many(self, prefix: str, count: int, at: datetime | None = None) -> list[str]:
        """``count`` fresh IDs of the moment ``at`` at once, in creation order: what ``new`` would
        give one call after another, made for a batch (a unit of work recording many clicks)."""
        ...
