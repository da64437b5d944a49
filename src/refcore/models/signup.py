"""Hosted signups waiting for their e-mail confirmation, and the counters that rate-limit them.

A :class:`PendingSignup` is what ``POST /v1/join/:programSlug`` records. The confirmation token
itself is never stored: only its SHA-256 digest (like API keys), so a copy of the database cannot
confirm anyone's signup. A token is single-use (``confirmed_at``) and expires (``expires_at``).

A :class:`RateLimitCounter` counts signups per e-mail address and per IP address in fixed
windows. It lives in the store, not in the server's memory, so the limit holds across every
server process; the counter's row is read ``for_update`` and its key is unique, so two requests
racing for the last slot of a window are serialised by the database.
"""

from __future__ import annotations

from datetime import datetime

from attrs import frozen


@frozen
class PendingSignup:
    """One request to join a program (``sgn_``), until its token is used or expires."""

    id: str
    app_id: str
    program_id: str
    email: str
    name: str
    #: SHA-256 hex digest of the confirmation token; unique.
    token_digest: str
    expires_at: datetime
    created_at: datetime
    #: Set when the token is used: it is then spent, whatever happens later.
    confirmed_at: datetime | None = None
    #: The program affiliate the confirmation created.
    program_affiliate_id: str | None = None

    def expired(self, now: datetime) -> bool:
        return now >= self.expires_at


@frozen
class RateLimitCounter:
    """How many times ``key`` was used in the window that starts at ``window_start`` (``rlc_``).

    ``key`` names what is limited and never holds personal data in clear: for example
    ``join:email:<sha256 of the address>``. The pair (``key``, ``window_start``) is unique.
    """

    id: str
    key: str
    window_start: datetime
    count: int
    created_at: datetime
