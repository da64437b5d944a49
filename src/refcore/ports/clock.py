"""Time as a port, so that tests move it (hold periods, attribution windows) instead of sleeping."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...
