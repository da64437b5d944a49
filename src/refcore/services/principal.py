"""Who is calling, once authenticated, and the activity scope their key selects."""

from __future__ import annotations

import enum

from attrs import field, frozen

from refcore.models import Mode
from refcore.validation import require_choice


class PrincipalKind(enum.StrEnum):
    SESSION = "session"
    APP_KEY = "app_key"
    MANAGED_KEY = "managed_key"
    AFFILIATE_KEY = "affiliate_key"


def _mode(value: object) -> Mode:
    """A mode from its member or its string (``"live"``), as every enumeration argument takes:
    a hand-built ``Scope(app_id, "live")`` had been stored as such on the memory store, and
    raised ``AttributeError`` on an SQL store (probe R). Anything else is ``validation_error``."""
    return require_choice(value, Mode, param="mode")


def _optional_mode(value: object) -> Mode | None:
    return None if value is None else _mode(value)


def _kind(value: object) -> PrincipalKind:
    return require_choice(value, PrincipalKind, param="kind")


@frozen
class Scope:
    """Where activity lives: one App, one mode."""

    app_id: str
    mode: Mode = field(converter=_mode)


@frozen
class Principal:
    kind: PrincipalKind = field(converter=_kind)
    user_id: str | None = None
    app_id: str | None = None
    mode: Mode | None = field(default=None, converter=_optional_mode)
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
