"""Deleting the balance projection's rows that no balance will read again.

The triggers of migrations 0004 and 0005 keep, per affiliate and mode, one row per UTC month,
day, hour and minute of the entries' ``available_at``. A balance read at ``now``
(:mod:`refcore_sqlstore.ledger`) sums every month row, but day rows only from the first of this
month, hour rows only from midnight today and minute rows only from the start of this hour. The
finer rows of the past are never read again, yet they were never deleted: an affiliate with a
few sales a day gains a minute, an hour and a day row with nearly every entry, so the table grew
faster than the ledger itself. The benchmark's year of history (100,000 entries, ten
affiliates) kept 143,614 bucket rows; pruning left 18,823 (``bench/history.md``, nineteenth
session): the month rows, and the rows of the current month, day and hour and of the weeks
ahead (entries waiting out their hold).

**A margin of one grain.** Each cutoff is one grain earlier than the oldest bucket a read at
``now`` would sum (the minutes of the previous hour are kept, the hours of yesterday, the days of
last month), so a server whose clock is behind the pruning one by less than an hour still finds
every row it reads, and a read that began just before an hour turned is never short.

**Safe beside the writers.** A pruned row can come back: moving an old entry (its payment
disputed, a payout item made or dropped) upserts its minute, hour and day rows again, with the
change in them. Nothing reads such a row, and the next pruning deletes it again. Rows go in
batches of ``batch``, each its own short transaction (on SQLite a member of the group commit, so
the writers wait for one batch at most, never for the whole pruning); on PostgreSQL a batch
skips the rows other transactions hold (``FOR UPDATE SKIP LOCKED``) rather than waiting for
them, so pruning never takes part in a deadlock, and the rows it skipped go next time. The
``(grain, bucket)`` index (migration 0006) lets each batch find its rows without reading the
rest of the table.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial

from sqlalchemy import Connection, Engine, text

from refcore_sqlstore.batched_deletes import PRUNE_BATCH, delete_in_batches
from refcore_sqlstore.errors import database_errors

_SQLITE_BATCH = text(
    "DELETE FROM affiliate_balance_buckets WHERE rowid IN ("
    " SELECT rowid FROM affiliate_balance_buckets"
    " WHERE grain = :grain AND bucket < :cutoff LIMIT :batch)"
)
_POSTGRESQL_BATCH = text(
    "DELETE FROM affiliate_balance_buckets WHERE ctid = ANY(ARRAY("
    " SELECT ctid FROM affiliate_balance_buckets"
    " WHERE grain = :grain AND bucket < :cutoff LIMIT :batch FOR UPDATE SKIP LOCKED))"
)


def prune_cutoffs(now: datetime) -> dict[str, str]:
    """Per grain, the bucket before which rows are deleted: one grain before the oldest bucket
    of that grain a balance read at ``now`` sums (see the module docstring)."""
    now = now.astimezone(UTC)
    previous_hour = now - timedelta(hours=1)
    yesterday = now - timedelta(days=1)
    last_month = now.replace(day=1) - timedelta(days=1)
    return {
        "minute": previous_hour.strftime("%Y-%m-%d %H:00"),
        "hour": yesterday.strftime("%Y-%m-%d 00"),
        "day": last_month.strftime("%Y-%m-01"),
    }


def prune_batch(connection: Connection, grain: str, cutoff: str, *, batch: int = PRUNE_BATCH) -> int:
    """Delete up to ``batch`` rows of ``grain`` older than ``cutoff`` in the connection's
    transaction; how many went."""
    statement = _POSTGRESQL_BATCH if connection.dialect.name == "postgresql" else _SQLITE_BATCH
    with database_errors():
        result = connection.execute(statement, {"grain": grain, "cutoff": cutoff, "batch": batch})
    return int(result.rowcount)


def prune_balance_buckets(engine: Engine, now: datetime, *, batch: int = PRUNE_BATCH) -> int:
    """Delete every row of the projection that no balance read at ``now`` or later sums, a
    batch per transaction; how many went."""
    return sum(
        delete_in_batches(engine, partial(prune_batch, grain=grain, cutoff=cutoff), batch=batch)
        for grain, cutoff in prune_cutoffs(now).items()
    )
