"""Identifier generation as a port: prefixed, time-ordered IDs (ID order is creation order)."""

from __future__ import annotations

from typing import Protocol


class IdGenerator(Protocol):
    def new(self, prefix: str) -> str:
        """A fresh ID such as ``txn_01J…``; IDs of one prefix sort in creation order."""
        ...
