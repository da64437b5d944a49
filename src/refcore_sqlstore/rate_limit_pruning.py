"""Deleting rate-limit counters whose window has ended.

Each hosted signup counts up one row per limit and window
(:mod:`refcore.services.rate_limits`); once the window is over the row is never read again, but
nothing deleted it. A window is at most a day long, so every counter whose window began before
:func:`~refcore.services.rate_limits.forgettable_before` may go. Batches are short transactions,
as for the balance projection (:mod:`refcore_sqlstore.bucket_pruning`); the table is small and
written in time order, so each batch finds its rows first in a scan of the unique
``(key, window_start)`` index or of the table.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from refcore.services.rate_limits import forgettable_before
from refcore_sqlstore.batched_deletes import PRUNE_BATCH, RowsBefore
from refcore_sqlstore.tables import rate_limit_counters

_ENDED = RowsBefore(rate_limit_counters, rate_limit_counters.c.window_start)


def prune_rate_limit_counters(engine: Engine, now: datetime, *, batch: int = PRUNE_BATCH) -> int:
    """Delete every counter no limit reads at ``now`` or later, a batch per transaction."""
    return _ENDED.delete_all(engine, forgettable_before(now), batch=batch)
