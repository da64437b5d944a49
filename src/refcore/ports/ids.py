"""Identifier generation as a port: prefixed, time-ordered IDs (ID order is creation order)."""

from __future__ import annotations

from typing import Protocol


class IdGenerator(Protocol):
    def new(self, prefix: str) -> str:
        """A fresh ID such as ``txn_01J…``; IDs of one prefix sort in creation order."""
        ...

    def new_many(self, prefix: str, count: int) -> list[str]:
        """``count`` fresh IDs at once, in creation order: what ``new`` would give one call after
        another, made for a batch (a unit of work recording many clicks)."""
        ...
