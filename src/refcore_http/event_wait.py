"""Waiting on an asyncio event for at most a while: the background loops' sleep that a stop cuts short."""

from __future__ import annotations

import asyncio
import contextlib


async def wait_for_event(event: asyncio.Event, seconds: float) -> None:
    """Until ``event`` is set or ``seconds`` have passed, whichever comes first."""
    if seconds > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout=seconds)
