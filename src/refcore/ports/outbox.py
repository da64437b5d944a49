"""Claiming outbox events for delivery, once across every server process.

This cannot be a plain repository query: on PostgreSQL it is ``SELECT … FOR UPDATE SKIP
LOCKED`` so that several dispatchers never claim the same event, each in its own short
transaction that commits the claim before any network call is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from refcore.models import Event


class EventOutbox(Protocol):
    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        """Mark up to ``limit`` unclaimed events (or events whose claim is older than the lease,
        left by a crashed process) as claimed at ``now`` and return them, oldest first.
        Commits before returning. A ``limit`` below 1 is a ``ValueError``: each database read a
        negative one its own way (SQLite as no limit, PostgreSQL as an error, a list slice as
        "all but the last")."""
        ...

    def mark_delivered(self, event_id: str, *, now: datetime) -> None:
        """Record that the single attempt for this event is over. Commits."""
        ...

    def mark_all_delivered(self, event_ids: Sequence[str], *, now: datetime) -> None:
        """Close events that need no attempt at all (no endpoint, a disabled one, a type it does
        not take), in one statement; an event already closed keeps its time. Commits."""
        ...


def check_claim_limit(limit: int) -> None:
    """Raise ``ValueError`` for a claim ``limit`` below 1, so that every store refuses the same
    calls (:meth:`EventOutbox.claim`)."""
    if limit < 1:
        raise ValueError(f"an outbox claim's limit must be at least 1, not {limit}")
