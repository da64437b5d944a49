"""Clock implementations: the real one, and a manual one tests (and the HTTP test app) move by hand."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to; thread-safe so a test server can share it."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now += delta

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment
