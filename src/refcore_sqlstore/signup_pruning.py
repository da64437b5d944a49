"""Deleting the pending signups that were never confirmed, a week after their token expired.

Nothing else deleted them, and each holds an address and a name that its owner may never have
meant to give (anyone can type an address into a join page): they piled up, within the join
limits' pace, for good (probe V). A confirmed signup stays, beside the affiliate it created. The
week (:data:`refcore.services.join.EXPIRED_SIGNUP_KEPT`) keeps a late click's answer "expired"
rather than "not valid". Batches are short transactions, as for the other pruning
(:mod:`refcore_sqlstore.batched_deletes`); the table is small (the join limits bound its growth),
so a batch's scan needs no index of its own.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from sqlalchemy import Connection, Engine, bindparam, delete, select

from refcore.services.join import signups_forgettable_before
from refcore_sqlstore.batched_deletes import PRUNE_BATCH, delete_in_batches
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.tables import pending_signups
from refcore_sqlstore.types import UtcDateTime

_s = pending_signups
_FORGOTTEN = (
    select(_s.c.id)
    .where(_s.c.confirmed_at.is_(None), _s.c.expires_at < bindparam("cutoff", type_=UtcDateTime()))
    .limit(bindparam("batch"))
)
_SQLITE_BATCH = delete(_s).where(_s.c.id.in_(_FORGOTTEN.scalar_subquery()))
#: PostgreSQL: a signup being confirmed right now (its row locked) is left, never waited for.
_POSTGRESQL_BATCH = delete(_s).where(
    _s.c.id.in_(_FORGOTTEN.with_for_update(skip_locked=True).scalar_subquery())
)


def prune_signup_batch(connection: Connection, cutoff: datetime, *, batch: int = PRUNE_BATCH) -> int:
    """Delete up to ``batch`` unconfirmed signups whose token expired before ``cutoff``."""
    statement = _POSTGRESQL_BATCH if connection.dialect.name == "postgresql" else _SQLITE_BATCH
    with database_errors():
        result = connection.execute(statement, {"cutoff": cutoff, "batch": batch})
    return int(result.rowcount)


def prune_pending_signups(engine: Engine, now: datetime, *, batch: int = PRUNE_BATCH) -> int:
    """Delete every unconfirmed signup no one needs at ``now``, a batch per transaction."""
    return delete_in_batches(
        engine, partial(prune_signup_batch, cutoff=signups_forgettable_before(now)), batch=batch
    )
