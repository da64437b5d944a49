"""What an App shows its affiliates: its agreement (versioned text) and its logo.

The agreement is published like program terms: every version is kept, the newest is current,
so an affiliate's acceptance can always be traced to the exact text they saw.

The logo is one record per App (``app_id`` is unique): uploading again replaces it, removing it
keeps the row with ``data`` cleared (repositories have no delete). The image bytes live in the
store itself, so every server process can answer the public logo URL; they are at most 1 MiB and
their type was sniffed from the bytes when uploaded (see :mod:`refcore.rules.images`).
"""

from __future__ import annotations

from datetime import datetime

from attrs import frozen


@frozen
class AgreementVersion:
    """One published version of an App's affiliate agreement (``agr_``)."""

    id: str
    app_id: str
    text: str
    created_at: datetime


@frozen
class AppLogo:
    """An App's logo (``logo_``); ``data`` is ``None`` once the logo was removed."""

    id: str
    app_id: str
    created_at: datetime
    updated_at: datetime
    #: ``image/png``, ``image/jpeg`` or ``image/webp``, from the bytes; ``None`` when removed.
    content_type: str | None = None
    data: bytes | None = None
    #: SHA-256 hex digest of ``data``: the public URL's ``ETag``.
    sha256: str | None = None
    size: int = 0

    @property
    def present(self) -> bool:
        return self.data is not None
