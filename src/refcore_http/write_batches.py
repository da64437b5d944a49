"""Keyed writes that arrive together run together on SQLite: one worker thread, one commit.

SQLite writes one transaction at a time, so a process's concurrent writes already take turns and
share a ``COMMIT`` (:mod:`refcore_sqlstore.group_commit`). But each write still ran in a worker
thread of its own, and on the server's one CPU eight threads handing the write turn and the GIL
to one another cost about a third of a payment's CPU: in-process, eight threads used 0.60 ms of
CPU a payment, where one thread running the same payments in batches of 32 used 0.44 with a
savepoint each (``bench/history.md``, twenty-sixth session).

So an endpoint marked ``batched`` (a payment, a refund, a dispute, an identify) hands its
request's work (authentication, then its handler) to the event loop's batches
(:mod:`refcore_http.loop_batches`), and one worker thread runs a batch's requests one after
another in :meth:`Runtime.batch <refcore.services.runtime.Runtime.batch>`: each
request's transaction is a member with its own savepoint (and each key of the batch is looked
up once: :func:`refcore_http.auth.principals_shared`), so one that fails (a validation
error, an idempotency conflict) rolls back its own writes only and answers its own error, and
the batch is committed once, when all of them ran. Every answer waits for that commit, so an
acknowledged write is still a durable one. If the commit fails, the batch's requests run again
one by one, each as the worker threads run it (its own commit, with ``Runtime.transaction``'s
retries), and so does a request that arrives alone. A request whose transaction lost a race in
the batch (``ConcurrentWrite``: another process wrote the same row first) runs again alone once
the batch has committed: ``Runtime.batch`` does not retry it inside, where the retry would wait
holding the batch's write turn.

Only handlers whose work is one transaction, with nothing read after it, are batched: inside a
batch a transaction returns before it is committed, and a read on another connection would not
see it yet. Stores without write batches (PostgreSQL and the memory store) run every request
in the worker threads as before. On PostgreSQL, batches were built and measured slower: one
thread waits for the database's work on each member after its own Python, where eight threads
overlap the two, and a batch holds its rows' locks until its one commit (``bench/history.md``,
twenty-seventh session).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from refcore.errors import ConcurrentWrite
from refcore.services.runtime import Runtime
from refcore_http.auth import principals_shared
from refcore_http.endpoints import Reply
from refcore_http.loop_batches import LoopBatches
from refcore_http.workers import WorkerThreads

#: Requests run in one batch at most: the batch holds SQLite's write turn while they run.
MAX_BATCH = 32

#: A request's work: its authentication and its handler, as the worker threads would run it.
Work = Callable[[], Reply]


class WriteBatches(LoopBatches[Work, Reply]):
    """Runs batched endpoints' requests in write batches (see the module docstring)."""

    def __init__(self, runtime: Runtime, workers: WorkerThreads, *, max_batch: int = MAX_BATCH) -> None:
        self._runtime = runtime
        super().__init__(self._run_in_one_batch, workers, max_batch=max_batch)

    def _run_in_one_batch(self, works: Sequence[Work]) -> list[Reply | Exception]:
        """Each request's reply or the exception it answers with, once the batch is committed.
        A request alone runs as the worker threads run it: its transaction commits by itself,
        with ``Runtime.transaction``'s retries when SQLite is busy (another process writing)."""
        if len(works) == 1:
            return [_outcome(works[0])]
        with self._runtime.batch(), principals_shared():
            outcomes = [_outcome(work) for work in works]
        # A lost race is not retried inside the batch (``Runtime.batch``): run it again alone.
        return [
            _outcome(work) if isinstance(outcome, ConcurrentWrite) else outcome
            for work, outcome in zip(works, outcomes, strict=True)
        ]


def _outcome(work: Work) -> Reply | Exception:
    try:
        return work()
    except Exception as error:  # this request's own answer; its savepoint is undone
        return error


def write_batches(runtime: Runtime, workers: WorkerThreads) -> WriteBatches | None:
    """Write batches for the runtime's store, or ``None`` when it has none."""
    return None if runtime.write_batch is None else WriteBatches(runtime, workers)
