"""An App's profile for its affiliates: the agreement (published versions) and the logo.

Both are App configuration: a session of the App's organization or one of the App's keys may
change them (decisions 1); another tenant's App is ``404``. The join page shows the current
agreement and the logo to anyone (:mod:`refcore.services.join`), and the logo's bytes are served
publicly by ``GET /v1/apps/:id/logo``.
"""

from __future__ import annotations

import hashlib

from attrs import evolve

from refcore.errors import NotFound
from refcore.models.app_profile import AgreementVersion, AppLogo
from refcore.rules.images import require_logo
from refcore.services.access import require_app
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.services.version_history import VersionHistory, version_history
from refcore.validation import require_text

MAX_AGREEMENT = 100_000


# -- agreement -------------------------------------------------------------------------------


def current_agreement(tx: Tx, app_id: str) -> AgreementVersion | None:
    """The newest published version, read as one row (not the whole history)."""
    newest = tx.uow.agreement_versions.page({"app_id": app_id}, limit=1, before=None)
    return newest[0] if newest else None


def publish_agreement(rt: Runtime, principal: Principal, app_id: str, text: object) -> AgreementVersion:
    """A new version; it becomes current at once. Earlier versions are kept, never changed.

    ``PATCH /v1/apps/:id/agreement``. Errors: ``validation_error`` (``text``: missing, or over 100,000
    characters), ``app_not_found``."""
    body = require_text(text, param="text", max_length=MAX_AGREEMENT)

    def work(tx: Tx) -> AgreementVersion:
        require_app(tx, principal, app_id)
        version = AgreementVersion(id=tx.new_id("agr"), app_id=app_id, text=body, created_at=tx.now)
        tx.uow.agreement_versions.add(version)
        return version

    return rt.transaction(work)


def agreement_history(
    rt: Runtime,
    principal: Principal,
    app_id: str,
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> VersionHistory[AgreementVersion]:
    """The current agreement and one page of every published version, newest first.

    ``GET /v1/apps/:id/agreement``. Errors: ``app_not_found``, ``validation_error`` (``limit``),
    ``invalid_starting_after``."""

    def work(tx: Tx) -> VersionHistory[AgreementVersion]:
        require_app(tx, principal, app_id)
        return version_history(
            tx.uow.agreement_versions,
            {"app_id": app_id},
            prefix="agr",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def get_agreement_version(
    rt: Runtime, principal: Principal, app_id: str, version_id: str
) -> AgreementVersion:
    """One published version of the App's agreement (``GET /v1/apps/:id/agreement/versions/:versionId``).

    Errors: ``app_not_found``, ``agreement_version_not_found``."""

    def work(tx: Tx) -> AgreementVersion:
        require_app(tx, principal, app_id)
        version = tx.uow.agreement_versions.get(version_id)
        if version is None or version.app_id != app_id:
            raise NotFound.of("agreement_version", version_id)
        return version

    return rt.read(work)


# -- logo ------------------------------------------------------------------------------------


def current_logo(tx: Tx, app_id: str) -> AppLogo | None:
    """The App's logo, or ``None`` when it has none (never uploaded, or removed: the row stays, emptied)."""
    logo = tx.uow.app_logos.find_one({"app_id": app_id})
    return logo if logo is not None and logo.present else None


def upload_logo(rt: Runtime, principal: Principal, app_id: str, data: bytes) -> AppLogo:
    """Store ``data`` as the App's logo, replacing any earlier one.

    Another tenant's App is ``404`` whatever the body. Then the type is sniffed from the bytes
    (PNG, JPEG or WebP; SVG and anything else refused) and the size checked, before anything is
    written: a refused upload changes nothing.

    ``POST /v1/apps/:id/logo``. Errors: ``app_not_found``, ``validation_error`` (empty, or not PNG, JPEG
    or WebP), ``body_too_large`` (over 1 MiB).
    """

    def work(tx: Tx) -> AppLogo:
        require_app(tx, principal, app_id)
        content_type = require_logo(data)
        sha256 = hashlib.sha256(data).hexdigest()
        existing = tx.uow.app_logos.find_one({"app_id": app_id}, for_update=True)
        if existing is None:
            logo = AppLogo(id=tx.new_id("logo"), app_id=app_id, created_at=tx.now, updated_at=tx.now)
        else:
            logo = existing
        logo = evolve(
            logo,
            content_type=content_type.value,
            data=bytes(data),
            sha256=sha256,
            size=len(data),
            updated_at=tx.now,
        )
        if existing is None:
            tx.uow.app_logos.add(logo)
        else:
            tx.uow.app_logos.replace(logo)
        return logo

    return rt.transaction(work)


def remove_logo(rt: Runtime, principal: Principal, app_id: str) -> AppLogo:
    """Clear the logo; ``404 logo_not_found`` when there is none. The row stays (no deletes).

    Returns the logo as it was before, as every delete of the API answers the object it removed
    (a link, the webhook endpoint): the cleared row has nothing left to show.

    ``DELETE /v1/apps/:id/logo``. Errors: ``app_not_found``, ``logo_not_found``."""

    def work(tx: Tx) -> AppLogo:
        require_app(tx, principal, app_id)
        logo = tx.uow.app_logos.find_one({"app_id": app_id}, for_update=True)
        if logo is None or not logo.present:
            raise NotFound(f"App {app_id} has no logo", code="logo_not_found")
        cleared = evolve(logo, content_type=None, data=None, sha256=None, size=0, updated_at=tx.now)
        tx.uow.app_logos.replace(cleared)
        return logo

    return rt.transaction(work)


def public_logo(rt: Runtime, app_id: str) -> AppLogo:
    """The logo anyone may fetch (the join page shows it); ``404 logo_not_found`` without one.

    ``GET /v1/apps/:id/logo``, without a credential. Errors: ``logo_not_found``."""

    def work(tx: Tx) -> AppLogo:
        logo = current_logo(tx, app_id)
        if logo is None:
            raise NotFound("No logo here", code="logo_not_found")
        return logo

    return rt.read(work)
