"""Who is calling, once authenticated, and the activity scope their key selects."""

from __future__ import annotations

import enum

from attrs import frozen

from refcore.models import Mode


class PrincipalKind(enum.StrEnum):
    SESSION = "session"
    APP_KEY = "app_key"
    MANAGED_KEY = "managed_key"
    AFFILIATE_KEY = "affiliate_key"


@frozen
class Scope:
    """Where activity lives: one App, one mode."""

    app_id: str
    mode: Mode


@frozen
class Principal:
    kind: PrincipalKind
    user_id: str | None = None
    app_id: str | None = None
    mode: Mode | None = None
    program_affiliate_id: str | None = None
    key_id: str | None = None

    @property
    def is_session(self) -> bool:
        return self.kind is PrincipalKind.SESSION

    @property
    def is_app_key(self) -> bool:
        """App keys and managed revenue keys: both act for one App in one mode."""
        return self.kind in (PrincipalKind.APP_KEY, PrincipalKind.MANAGED_KEY)

    @property
    def may_use_promotion_code(self) -> bool:
        return self.kind is PrincipalKind.MANAGED_KEY
