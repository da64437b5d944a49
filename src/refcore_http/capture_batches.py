"""Captures that arrive together are recorded together: one worker hop, one unit of work, one commit.

A capture is the busiest write there is (a click on every landing page) and the smallest: one
row. Recorded one request at a time, each paid a thread hop, a unit of work, a link lookup, an
insert and its share of a commit, about 0.33 ms of CPU on the benchmark machine against 0.12 ms
for the whole ceiling request (``docs/performance.md``). Here a validated capture waits on the
event loop instead, and the captures waiting together are recorded in one batch
(:mod:`refcore_http.loop_batches`, which also says how a batch gathers). Under wrk's 32
connections the batches hold 32, and a batch's fixed cost (its unit of work, ``BEGIN``, link
lookup, ``COMMIT`` and the log's ``fsync``: about 0.19 ms of CPU) is paid once for them all
(``bench/history.md``, fifth and twentieth sessions).

Each capture still gets its own answer, and only after the batch's commit, so an acknowledged
click is a durable one. An unknown link, or a server capture's failing key, fails its own
capture only (:func:`refcore.services.tracking.record_captures`). If the batch's unit of work fails as a
whole (a database error), its captures are recorded again one by one, so a capture that cannot
be written fails alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from refcore.errors import RefcoreError
from refcore.models import Click
from refcore.services.tracking import PendingCapture
from refcore_http.loop_batches import MAX_GATHERING_PASSES, QUIET_PASSES, LoopBatches
from refcore_http.workers import WorkerThreads

__all__ = ["MAX_BATCH", "MAX_GATHERING_PASSES", "QUIET_PASSES", "CaptureBatches", "Recorder"]

#: Captures recorded in one unit of work at most; more waiting ones go in the next batch.
MAX_BATCH = 128

#: :func:`refcore.services.tracking.record_captures` bound to the app's runtime.
Recorder = Callable[[Sequence[PendingCapture]], list[Click | RefcoreError]]


class CaptureBatches(LoopBatches[PendingCapture, Click]):
    """Records captures awaited on an event loop in batches (see the module docstring):
    ``record`` gives the capture's click once it is committed; ``link_not_found`` for an
    unknown link, and for a server capture ``unauthenticated`` or ``forbidden`` when its key
    fails."""

    def __init__(self, record: Recorder, workers: WorkerThreads, *, max_batch: int = MAX_BATCH) -> None:
        super().__init__(record, workers, max_batch=max_batch)
