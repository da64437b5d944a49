"""Who owns what: users, sessions, organizations, Apps and API keys.

Secrets (session tokens, API keys) are never held here, only their SHA-256 digests.
"""

from __future__ import annotations

import enum
from datetime import datetime

from attrs import frozen

from refcore.models.mode import Mode
from refcore.models.revenue import RevenueSource


@frozen
class User:
    id: str
    email: str
    created_at: datetime


@frozen
class Session:
    id: str
    user_id: str
    token_digest: str
    created_at: datetime


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
