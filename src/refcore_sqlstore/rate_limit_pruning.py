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
from functools import partial

from sqlalchemy import Connection, Engine, bindparam, delete, select

from refcore.services.rate_limits import forgettable_before
from refcore_sqlstore.batched_deletes import PRUNE_BATCH, delete_in_batches
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.tables import rate_limit_counters
from refcore_sqlstore.types import UtcDateTime

_c = rate_limit_counters
_ENDED = (
    select(_c.c.id)
    .where(_c.c.window_start < bindparam("cutoff", type_=UtcDateTime()))
    .limit(bindparam("batch"))
)
_SQLITE_BATCH = delete(_c).where(_c.c.id.in_(_ENDED.scalar_subquery()))
#: PostgreSQL: rows another transaction holds are left for the next pruning, never waited for.
_POSTGRESQL_BATCH = delete(_c).where(_c.c.id.in_(_ENDED.with_for_update(skip_locked=True).scalar_subquery()))


def prune_counter_batch(connection: Connection, cutoff: datetime, *, batch: int = PRUNE_BATCH) -> int:
    """Delete up to ``batch`` counters whose window began before ``cutoff``; how many went."""
    statement = _POSTGRESQL_BATCH if connection.dialect.name == "postgresql" else _SQLITE_BATCH
    with database_errors():
        result = connection.execute(statement, {"cutoff": cutoff, "batch": batch})
    return int(result.rowcount)


def prune_rate_limit_counters(engine: Engine, now: datetime, *, batch: int = PRUNE_BATCH) -> int:
    """Delete every counter no limit reads at ``now`` or later, a batch per transaction."""
    return delete_in_batches(
        engine, partial(prune_counter_batch, cutoff=forgettable_before(now)), batch=batch
    )
