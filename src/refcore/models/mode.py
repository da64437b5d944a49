"""Test or Live: every activity record belongs to exactly one mode, chosen by the API key."""

from __future__ import annotations

import enum


class Mode(enum.StrEnum):
    TEST = "test"
    LIVE = "live"

    @property
    def livemode(self) -> bool:
        return self is Mode.LIVE
