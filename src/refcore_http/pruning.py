"""Pruning the store for as long as the server runs (part of the Starlette lifespan).

The SQL store's balance projection keeps day, hour and minute rows that no balance reads once
their day, hour or minute has passed (:mod:`refcore_sqlstore.bucket_pruning`), and a rate-limit
counter per window (:mod:`refcore_sqlstore.rate_limit_pruning`); left alone they grow with the
ledger and with every signup. Every ``REFCORE_PRUNE_INTERVAL_SECONDS`` (and once at start) each server
process deletes them, off the event loop. Several processes pruning at once only find less to
do. A pruning that fails is logged and tried again at the next interval: nothing a request
needs depends on it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from refcore.ports import Clock
from refcore_http.event_wait import wait_for_event

logger = logging.getLogger("refcore.pruning")

Prune = Callable[[datetime], int]


class Pruner:
    """Calls ``prune(clock.now())`` in a thread every ``interval_seconds`` until stopped."""

    def __init__(self, prune: Prune, clock: Clock, interval_seconds: float) -> None:
        if interval_seconds <= 0:
            raise ValueError("the pruning interval must be positive")
        self._prune = prune
        self._clock = clock
        self._interval = interval_seconds
        self._halt: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        #: Rows deleted by this process so far.
        self.pruned = 0
        #: Prunings finished so far, failed or not.
        self.passes = 0

    async def start(self) -> None:
        self._halt = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="refcore-pruning")

    async def stop(self) -> None:
        """Let a pruning in progress finish, then return."""
        if self._halt is not None:
            self._halt.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        assert self._halt is not None
        while not self._halt.is_set():
            await self.run_once()
            await wait_for_event(self._halt, self._interval)

    async def run_once(self) -> int:
        """One pruning; how many rows it deleted (0 when it failed)."""
        try:
            deleted = await asyncio.to_thread(self._prune, self._clock.now())
        except Exception:
            logger.exception("pruning the store failed; trying again in %.0f s", self._interval)
            deleted = 0
        self.passes += 1
        self.pruned += deleted
        if deleted:
            logger.info("pruned %d rows no read needs (past balance buckets, ended limits)", deleted)
        return deleted
