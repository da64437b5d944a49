"""Deleting many rows as a run of short transactions, for the store's periodic pruning.

One ``DELETE`` of every prunable row would hold SQLite's write lock (or PostgreSQL's row locks)
for as long as it takes, and the first pruning of a year of history takes seconds. A batch per
transaction lets writers in between: on SQLite each batch is a member of the group commit
(:func:`~refcore_sqlstore.group_commit.write_transaction`), so a writer waits for one batch at
most.
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import Connection, Engine

from refcore_sqlstore.group_commit import write_transaction

#: Rows deleted per transaction.
PRUNE_BATCH = 1_000


class BatchDelete(Protocol):
    def __call__(self, connection: Connection, *, batch: int) -> int:
        """Delete up to ``batch`` rows in the connection's transaction; how many went."""
        ...


def delete_in_batches(engine: Engine, delete_batch: BatchDelete, *, batch: int) -> int:
    """Run ``delete_batch(connection, batch=batch)``, each in a transaction of its own, until it
    deletes fewer than ``batch`` rows; how many it deleted in all."""
    if batch < 1:
        raise ValueError("a pruning batch must hold at least one row")
    deleted = 0
    while True:
        with write_transaction(engine) as connection:
            this_batch = delete_batch(connection, batch=batch)
        deleted += this_batch
        if this_batch < batch:
            return deleted
