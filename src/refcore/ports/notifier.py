"""Told after a commit that events are waiting in the outbox (the webhook dispatcher listens)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from refcore.models import Event


class EventNotifier(Protocol):
    def events_committed(self, events: Sequence[Event]) -> None:
        """Called after commit only; must not raise and must not block for long."""
        ...
