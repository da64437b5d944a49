"""Aggregate reads over activity, for the setup status and overview of an App.

Dashboards need counts and sums over history that grows without bound (clicks, payments,
ledger entries). Loading every record to count it in Python would make a dashboard request
as slow as the history is long; this port lets each store answer with one aggregate query
(``SELECT count(*)``, ``sum(...)``, ``min(...)``) that an index answers by a range scan.

Filters are equality filters on model fields, as in :class:`~refcore.ports.repository.Repository`,
plus at most one half-open time range on one datetime field (``created_at`` unless told).
The set of filters the services use is fixed, and the SQL store has an index for each one (see
``refcore_sqlstore.tables``): add an index with any new query.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from attrs import frozen


@frozen
class Period:
    """``start <= field < end``; either end may be open (``None``)."""

    start: datetime | None = None
    end: datetime | None = None
    field: str = "created_at"

    def contains(self, moment: datetime | None) -> bool:
        if moment is None:
            return False
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)


class ActivityMetrics(Protocol):
    """Aggregates over the repositories of one unit of work, named as on the unit of work
    (``"clicks"``, ``"payments"``, …); they see the unit of work's own uncommitted writes."""

    def count(self, repository: str, where: Mapping[str, object], *, within: Period | None = None) -> int:
        """How many records match ``where`` (and fall in ``within``)."""
        ...

    def sum(
        self, repository: str, field: str, where: Mapping[str, object], *, within: Period | None = None
    ) -> int:
        """The sum of the integer ``field`` over the matching records; ``0`` when none match."""
        ...

    def earliest(
        self, repository: str, where: Mapping[str, object], *, field: str = "created_at"
    ) -> datetime | None:
        """The smallest value of the datetime ``field`` among matching records, or ``None``."""
        ...
