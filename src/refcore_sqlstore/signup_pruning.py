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

from sqlalchemy import Engine

from refcore.services.join import signups_forgettable_before
from refcore_sqlstore.batched_deletes import PRUNE_BATCH, RowsBefore
from refcore_sqlstore.tables import pending_signups

#: A signup being confirmed right now (its row locked) is left, never waited for.
_FORGOTTEN = RowsBefore(
    pending_signups, pending_signups.c.expires_at, pending_signups.c.confirmed_at.is_(None)
)


def prune_pending_signups(engine: Engine, now: datetime, *, batch: int = PRUNE_BATCH) -> int:
    """Delete every unconfirmed signup no one needs at ``now``, a batch per transaction."""
    return _FORGOTTEN.delete_all(engine, signups_forgettable_before(now), batch=batch)
