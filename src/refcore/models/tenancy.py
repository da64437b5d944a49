"""Who owns what: users, sessions, organizations, Apps and API keys.

Secrets (session tokens, API keys) are never held here, only their SHA-256 digests.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

from attrs import evolve, frozen

from refcore.models.mode import Mode
from refcore.models.revenue import RevenueSource


@frozen
class User:
    id: str
    email: str
    created_at: datetime


#: How long a dashboard session authenticates after it was created, where nothing else is set
#: (:attr:`refcore.services.runtime.Runtime.session_lifetime`; the server's
#: ``REFCORE_SESSION_TTL_HOURS``). A session can create API keys, so a token that leaked, or
#: that someone who has left still holds, must stop working on its own, without anyone having
#: to notice; thirty days keeps an operator's ``refcore session`` a monthly chore, not a daily one.
DEFAULT_SESSION_LIFETIME = timedelta(days=30)

#: The ``token_digest`` of an ended session starts with this. Every token's digest is 64
#: hexadecimal digits, so no token ever looks such a row up again; the session's own ID after
#: it keeps the column unique.
_ENDED_DIGEST_PREFIX = "ended_"


@frozen
class Session:
    """A dashboard session. It authenticates for a fixed lifetime after ``created_at`` (the
    lifetime is a setting, applied when a token is checked, not stored), until it is ended.

    Ending a session destroys its digest (:meth:`ended_version`) instead of deleting the row:
    stores replace records and never delete them, and an ended row keeps who had a session
    and when it began, as a removed webhook endpoint keeps its row without its secret."""

    id: str
    user_id: str
    token_digest: str
    created_at: datetime

    def expires_at(self, lifetime: timedelta) -> datetime:
        """The first instant at which the session no longer authenticates."""
        return self.created_at + lifetime

    def authenticates_at(self, now: datetime, lifetime: timedelta) -> bool:
        """Whether the session's token is still good at ``now``: not ended, and ``now`` before
        :meth:`expires_at` (at that very instant it is refused)."""
        return not self.ended and now < self.created_at + lifetime

    @property
    def ended(self) -> bool:
        """Ended by its holder (``DELETE /v1/session``) or an operator (``refcore session --end-all``)."""
        return self.token_digest.startswith(_ENDED_DIGEST_PREFIX)

    def ended_version(self) -> Session:
        """This session with its digest destroyed: nothing can authenticate as it again, on any
        process, and no later lifetime setting can bring it back."""
        return evolve(self, token_digest=f"{_ENDED_DIGEST_PREFIX}{self.id}")


@frozen
class Organization:
    id: str
    name: str
    created_at: datetime


@frozen
class Membership:
    id: str
    organization_id: str
    user_id: str
    role: str
    created_at: datetime


@frozen
class App:
    id: str
    organization_id: str
    name: str
    created_at: datetime
    #: Locked by the first positive Live payment; ``None`` until then.
    live_revenue_source: RevenueSource | None = None
    processor_connected_test: bool = False
    processor_connected_live: bool = False

    def processor_connected(self, mode: Mode) -> bool:
        return self.processor_connected_live if mode is Mode.LIVE else self.processor_connected_test


class KeyKind(enum.StrEnum):
    APP = "app"
    MANAGED_REVENUE = "managed_revenue"
    AFFILIATE = "affiliate"


@frozen
class ApiKey:
    id: str
    app_id: str
    kind: KeyKind
    mode: Mode
    digest: str
    last4: str
    created_at: datetime
    revoked_at: datetime | None = None
    #: Set for affiliate keys only: the program affiliate the key acts as.
    program_affiliate_id: str | None = None
