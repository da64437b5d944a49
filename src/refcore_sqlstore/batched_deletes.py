"""Deleting many rows as a run of short transactions, for the store's periodic pruning.

One ``DELETE`` of every prunable row would hold SQLite's write lock (or PostgreSQL's row locks)
for as long as it takes, and the first pruning of a year of history takes seconds. A batch per
transaction lets writers in between: on SQLite each batch is a member of the group commit
(:func:`~refcore_sqlstore.group_commit.write_transaction`), so a writer waits for one batch at
most.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Connection, Engine, Table, bindparam, delete, select

from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.group_commit import write_transaction
from refcore_sqlstore.types import UtcDateTime

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


class RowsBefore:
    """The rows of ``table`` whose ``column`` is before a cutoff (and that match ``where``),
    deleted a batch at a time: the rate-limit counters of ended windows, the signups never
    confirmed. On PostgreSQL a row another transaction holds is left for the next pruning,
    never waited for."""

    def __init__(self, table: Table, column: Any, *where: ColumnElement[bool]) -> None:
        chosen = (
            select(table.c.id)
            .where(*where, column < bindparam("cutoff", type_=UtcDateTime()))
            .limit(bindparam("batch"))
        )
        self._sqlite = delete(table).where(table.c.id.in_(chosen.scalar_subquery()))
        skipping_locked = chosen.with_for_update(skip_locked=True).scalar_subquery()
        self._postgresql = delete(table).where(table.c.id.in_(skipping_locked))

    def delete_batch(self, connection: Connection, cutoff: datetime, *, batch: int = PRUNE_BATCH) -> int:
        """Delete up to ``batch`` of the rows before ``cutoff``; how many went."""
        statement = self._postgresql if connection.dialect.name == "postgresql" else self._sqlite
        with database_errors():
            result = connection.execute(statement, {"cutoff": cutoff, "batch": batch})
        return int(result.rowcount)

    def delete_all(self, engine: Engine, cutoff: datetime, *, batch: int = PRUNE_BATCH) -> int:
        """Delete every row before ``cutoff``, a batch per transaction; how many went."""
        return delete_in_batches(engine, partial(self.delete_batch, cutoff=cutoff), batch=batch)
