"""Program affiliates and their links."""

from __future__ import annotations

import enum
from datetime import datetime

from attrs import frozen


class AffiliateStatus(enum.StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    DISABLED = "disabled"


@frozen
class ProgramAffiliate:
    id: str
    app_id: str
    program_id: str
    email: str
    name: str
    status: AffiliateStatus
    created_at: datetime
    #: What ``enable`` restores; set when the affiliate is disabled.
    status_before_disable: AffiliateStatus | None = None


@frozen
class Link:
    """A ``via`` code. Codes are stored lower-case, which makes them unique case-insensitively."""

    id: str
    app_id: str
    program_id: str
    program_affiliate_id: str
    code: str
    created_at: datetime
    name: str | None = None
    #: Deleted links stop attributing but keep their code reserved, so old URLs never change owner.
    deleted_at: datetime | None = None
