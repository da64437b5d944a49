"""Aggregate reads for the in-memory store: the same answers as the SQL store's, by scanning.

Memory has no indexes; a scan of a dictionary is what an index range is elsewhere, and the
memory store is meant for tests and small single-process use where that is fast enough.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from refcore.ports.metrics import Period


class _Readable(Protocol):
    def find_all(self, where: Mapping[str, object]) -> list[Any]: ...


class MemoryMetrics:
    """Implements :class:`refcore.ports.metrics.ActivityMetrics` over one memory unit of work."""

    def __init__(self, repositories: Mapping[str, _Readable]) -> None:
        self._repositories = repositories

    def _matching(self, repository: str, where: Mapping[str, object], within: Period | None) -> list[Any]:
        rows = self._repositories[repository].find_all(where)
        if within is None:
            return rows
        return [row for row in rows if within.contains(getattr(row, within.field))]

    def count(self, repository: str, where: Mapping[str, object], *, within: Period | None = None) -> int:
        return len(self._matching(repository, where, within))

    def sum(
        self, repository: str, field: str, where: Mapping[str, object], *, within: Period | None = None
    ) -> int:
        return sum(int(getattr(row, field)) for row in self._matching(repository, where, within))

    def earliest(
        self, repository: str, where: Mapping[str, object], *, field: str = "created_at"
    ) -> datetime | None:
        moments = [getattr(row, field) for row in self._matching(repository, where, None)]
        present = [m for m in moments if m is not None]
        return min(present) if present else None
