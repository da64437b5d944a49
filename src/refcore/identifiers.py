"""Prefixed, time-ordered identifiers (ULID layout: 48-bit milliseconds + 80 random bits).

Within one generator IDs are strictly increasing even inside one millisecond (the random part
is incremented), so ID order is creation order and lists can page by ID alone.
"""

from __future__ import annotations

import secrets
import threading

from refcore.ports.clock import Clock

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_RANDOM_BITS = 80


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "".join(reversed(chars))


class TimeOrderedIds:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last = 0

    def new(self, prefix: str) -> str:
        millis = int(self._clock.now().timestamp() * 1000)
        with self._lock:
            candidate = (millis << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS)
            if candidate <= self._last:
                candidate = self._last + 1
            self._last = candidate
        return f"{prefix}_{_encode(candidate, 26)}"


def prefix_of(identifier: str) -> str:
    """``"txn"`` for ``"txn_01…"``; empty when the value carries no prefix."""
    head, sep, _ = identifier.partition("_")
    return head if sep else ""
