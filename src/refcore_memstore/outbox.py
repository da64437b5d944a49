"""The in-memory event outbox: claims under the database lock, so each event is claimed once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from attrs import evolve

from refcore.models import Event
from refcore.ports.outbox import check_claim_limit
from refcore_memstore.database import MemoryDatabase


class MemoryOutbox:
    def __init__(self, database: MemoryDatabase) -> None:
        self._db = database

    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        check_claim_limit(limit)
        expired = now - timedelta(seconds=lease_seconds)
        with self._db.lock:
            table = self._db.tables["events"]
            claimable = sorted(
                (
                    e
                    for e in table.values()
                    if isinstance(e, Event)
                    and e.delivered_at is None
                    and (e.claimed_at is None or e.claimed_at <= expired)
                ),
                key=lambda e: e.id,
            )[:limit]
            claimed = [evolve(e, claimed_at=now) for e in claimable]
            for event in claimed:
                table[event.id] = event
            return claimed

    def mark_delivered(self, event_id: str, *, now: datetime) -> None:
        with self._db.lock:
            table = self._db.tables["events"]
            event = table[event_id]
            assert isinstance(event, Event)
            table[event_id] = evolve(event, delivered_at=now)

    def mark_all_delivered(self, event_ids: Sequence[str], *, now: datetime) -> None:
        with self._db.lock:
            table = self._db.tables["events"]
            for event_id in event_ids:
                event = table[event_id]
                assert isinstance(event, Event)
                if event.delivered_at is None:
                    table[event_id] = evolve(event, delivered_at=now)
