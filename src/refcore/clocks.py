"""Clock implementations: the real one, and a manual one tests (and the HTTP test app) move by hand."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def _aware(moment: datetime) -> datetime:
    """``moment`` in UTC, if it has a time zone. The clock port promises aware UTC moments: a naive
    one had been stored as it was by the memory store (and shown in the machine's local time) and
    refused by SQLite with an opaque ``internal_error``; one at ``+05:30`` had been kept at that
    offset by the memory store and in UTC by the SQL stores, so the stores' models differed
    (probe L). The same instant, converted."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"a clock's moments must have a time zone: {moment!r} has none")
    return moment.astimezone(UTC)


class ManualClock:
    """A clock that only moves when told to; thread-safe so a test server can share it."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = datetime(2026, 1, 1, tzinfo=UTC) if start is None else _aware(start)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now += delta

    def set(self, moment: datetime) -> None:
        utc = _aware(moment)
        with self._lock:
            self._now = utc
