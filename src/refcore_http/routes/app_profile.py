"""An App's profile and health (interface 4.2): agreement, logo, setup status, overview.

- ``GET, PATCH /v1/apps/:id/agreement``: the current agreement and its history; ``PATCH {text}``
  publishes a new version (versions are never edited). ``GET …/agreement/versions/:versionId``
  reads one version.
- ``POST /v1/apps/:id/logo``: the raw image bytes are the body (any ``Content-Type``: the type is
  read from the bytes). PNG, JPEG or WebP, at most 1 MiB; SVG is refused. ``DELETE`` removes it.
  ``GET /v1/apps/:id/logo`` is public (the join page shows it) and answers the image itself.
- ``GET /v1/apps/:id/setup-status``: per mode (sessions see both, App keys their own).
- ``GET /v1/apps/:id/overview?environment=&from=&to=``: figures of one mode and period.
"""

from __future__ import annotations

from attrs import field, frozen

from refcore.models.app_profile import AgreementVersion, AppLogo
from refcore.representation import JsonObject, timestamp
from refcore.services import app_profile, overview, setup_status
from refcore.services.overview import Overview
from refcore.services.setup_status import ModeSetup
from refcore.services.version_history import VersionHistory
from refcore_http.endpoints import (
    DEVELOPER,
    ENVIRONMENT,
    PAGING,
    PUBLIC,
    Call,
    Endpoint,
    HeaderParam,
    Output,
    QueryParam,
    Reply,
    ok,
    returns,
)
from refcore_http.schemas import BOOLEAN, INTEGER, OBJECTS, STRING, TIMESTAMP, enum, nullable, ref, shape


@frozen
class AgreementBody:
    """A new version of the App's affiliate agreement; it becomes current at once."""

    text: str = field(metadata={"description": "The full agreement text (at most 100,000 characters)"})


# -- representations -------------------------------------------------------------------------


def represent_agreement(version: AgreementVersion) -> JsonObject:
    return {
        "id": version.id,
        "object": "agreement_version",
        "created_at": timestamp(version.created_at),
        "app_id": version.app_id,
        "text": version.text,
    }


def logo_url(logo: AppLogo) -> str:
    """Relative to the API's base URL; the digest changes the URL whenever the image changes."""
    return f"/v1/apps/{logo.app_id}/logo?v={(logo.sha256 or '')[:16]}"


def _logo(logo: AppLogo) -> JsonObject:
    """A logo with its image: an upload, or a removed logo as it was (the answer of its delete)."""
    return {
        "id": logo.id,
        "object": "app_logo",
        "created_at": timestamp(logo.created_at),
        "app_id": logo.app_id,
        "content_type": logo.content_type,
        "size": logo.size,
        "sha256": logo.sha256,
        "url": logo_url(logo),
        "updated_at": timestamp(logo.updated_at),
    }


def _history(app_id: str, versions: VersionHistory[AgreementVersion]) -> JsonObject:
    return {
        "object": "app_agreement",
        "app_id": app_id,
        "current": represent_agreement(versions.current) if versions.current else None,
        "history": [represent_agreement(v) for v in versions.page.data],
        "has_more": versions.page.has_more,
    }


def _mode_setup(status: ModeSetup | None) -> JsonObject | None:
    if status is None:
        return None
    return {
        "livemode": status.mode.livemode,
        "complete": status.complete,
        "revenue_source": {
            "source": status.revenue_source.value if status.revenue_source else None,
            "locked": status.revenue_source_locked,
        },
        "processor": {"connected": status.processor_connected},
        "webhook": {"configured": status.webhook_configured, "disabled": status.webhook_disabled},
        "first_click_at": timestamp(status.first_click_at),
        "first_identify_at": timestamp(status.first_identify_at),
        "first_attributed_payment_at": timestamp(status.first_attributed_payment_at),
        "unattributed_payments": status.unattributed_payments,
        "alarms": [{"code": a.code, "message": a.message, "count": a.count} for a in status.alarms],
    }


def _overview(figures: Overview) -> JsonObject:
    return {
        "object": "app_overview",
        "app_id": figures.app_id,
        "livemode": figures.mode.livemode,
        "from": timestamp(figures.start),
        "to": timestamp(figures.end),
        "clicks": figures.clicks,
        "referrals": figures.referrals,
        "attributed_customers": figures.attributed_customers,
        "currencies": [
            {
                "currency": c.currency,
                "revenue": c.revenue,
                "attributed_revenue": c.attributed_revenue,
                "commissions_earned": c.commissions_earned,
                "commissions_reversed": c.commissions_reversed,
                "commissions_reinstated": c.commissions_reinstated,
                "commissions_paid": c.commissions_paid,
            }
            for c in figures.currencies
        ],
    }


# -- handlers --------------------------------------------------------------------------------


def show_agreement(call: Call) -> Reply:
    app_id = call.params["id"]
    versions = app_profile.agreement_history(
        call.runtime,
        call.who,
        app_id,
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return ok(_history(app_id, versions))


def publish_agreement(call: Call) -> Reply:
    body: AgreementBody = call.body
    app_id = call.params["id"]
    app_profile.publish_agreement(call.runtime, call.who, app_id, body.text)
    return ok(_history(app_id, app_profile.agreement_history(call.runtime, call.who, app_id)))


def get_agreement_version(call: Call) -> Reply:
    version = app_profile.get_agreement_version(
        call.runtime, call.who, call.params["id"], call.params["versionId"]
    )
    return ok(represent_agreement(version))


def upload_logo(call: Call) -> Reply:
    return ok(_logo(app_profile.upload_logo(call.runtime, call.who, call.params["id"], call.raw_body)))


def remove_logo(call: Call) -> Reply:
    """The logo as it was, with ``"deleted": true``, like every delete (docs/api.md)."""
    logo = app_profile.remove_logo(call.runtime, call.who, call.params["id"])
    return ok({**_logo(logo), "deleted": True})


def show_logo(call: Call) -> Reply:
    """The image itself, with the type sniffed at upload; never re-sniffed by browsers.

    A client that sends the ``ETag`` it has in ``If-None-Match`` gets ``304`` and no body
    (RFC 9110 13.1.2): every join page shows the logo, and the ``ETag`` had been sent without
    ever saving a download."""
    logo = app_profile.public_logo(call.runtime, call.params["id"])
    assert logo.data is not None and logo.content_type is not None
    etag = f'"{logo.sha256}"'
    caching = (("ETag", etag), ("Cache-Control", "public, max-age=300"))
    if _matches(call.headers.get("if-none-match"), etag):
        return Reply(body=None, status=304, headers=caching)
    return Reply(
        body=None,
        text=logo.data,
        media_type=logo.content_type,
        headers=(
            *caching,
            ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", "default-src 'none'"),
        ),
    )


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weakly: ``W/"…"`` matches too) or is ``*``."""
    if not if_none_match:
        return False
    tags = (tag.strip().removeprefix("W/") for tag in if_none_match.split(","))
    return any(tag in (etag, "*") for tag in tags)


def show_setup_status(call: Call) -> Reply:
    status = setup_status.setup_status(call.runtime, call.who, call.params["id"])
    return ok(
        {
            "object": "setup_status",
            "app_id": status.app.id,
            "test": _mode_setup(status.test),
            "live": _mode_setup(status.live),
        }
    )


def show_overview(call: Call) -> Reply:
    figures = overview.overview(
        call.runtime,
        call.who,
        call.params["id"],
        environment=call.query.get("environment"),
        start=call.query.get("from"),
        end=call.query.get("to"),
    )
    return ok(_overview(figures))


_TAGS = ("apps",)

ROUTES = (
    Endpoint(
        "GET",
        "/v1/apps/:id/agreement",
        "Read the App's current agreement and a page of its history (newest first)",
        show_agreement,
        DEVELOPER,
        returns("AppAgreement"),
        query=PAGING,
        tags=_TAGS,
    ),
    Endpoint(
        "PATCH",
        "/v1/apps/:id/agreement",
        "Publish a new version of the App's agreement",
        publish_agreement,
        DEVELOPER,
        returns("AppAgreement"),
        body=AgreementBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/apps/:id/agreement/versions/:versionId",
        "Read one version of the App's agreement",
        get_agreement_version,
        DEVELOPER,
        returns("AgreementVersion"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/apps/:id/logo",
        "Upload the App's logo (the raw image is the body)",
        upload_logo,
        DEVELOPER,
        returns("AppLogo"),
        raw_body=True,
        raw_media_types=("image/png", "image/jpeg", "image/webp"),
        tags=_TAGS,
        description="PNG, JPEG or WebP, recognised from the bytes whatever the Content-Type says; "
        "at most 1 MiB (413 body_too_large); SVG and anything else is 400 validation_error "
        "(param logo). Replaces any earlier logo.",
    ),
    Endpoint(
        "DELETE",
        "/v1/apps/:id/logo",
        "Remove the App's logo",
        remove_logo,
        DEVELOPER,
        returns("DeletedAppLogo"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/apps/:id/logo",
        "The App's logo image (public, for the join page)",
        show_logo,
        PUBLIC,
        Output(schema=None, statuses=(200, 304), media_type="image/*"),
        query=(QueryParam("v", "Any value; the logo URL carries the image's digest so that caches refresh"),),
        headers=(
            HeaderParam(
                "If-None-Match",
                "The ETag of a copy the client has: 304 without a body if current",
                required=False,
            ),
        ),
        tags=_TAGS,
        description="Public. The image, with the type found at upload; without one, 404 logo_not_found. "
        "Answers an ETag (the image's SHA-256); If-None-Match with it is 304 Not Modified, no body.",
    ),
    Endpoint(
        "GET",
        "/v1/apps/:id/setup-status",
        "The App's Test and Live setup status",
        show_setup_status,
        DEVELOPER,
        returns("SetupStatus"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/apps/:id/overview",
        "The App's figures for one mode and period",
        show_overview,
        DEVELOPER,
        returns("AppOverview"),
        query=(
            ENVIRONMENT,
            QueryParam("from", "Start of the period, inclusive (ISO 8601; default: 30 days before to)"),
            QueryParam("to", "End of the period, exclusive (ISO 8601; default: now)"),
        ),
        tags=_TAGS,
    ),
)

# -- response schemas ------------------------------------------------------------------------

_AGREEMENT = shape(
    {
        "id": STRING,
        "object": {"const": "agreement_version"},
        "created_at": TIMESTAMP,
        "app_id": STRING,
        "text": STRING,
    }
)
_LOGO_FIELDS: dict[str, JsonObject] = {
    "id": STRING,
    "object": {"const": "app_logo"},
    "created_at": TIMESTAMP,
    "app_id": STRING,
    "content_type": enum("image/png", "image/jpeg", "image/webp"),
    "size": INTEGER,
    "sha256": STRING,
    "url": STRING,
    "updated_at": TIMESTAMP,
}
_MODE_SETUP = shape(
    {
        "livemode": BOOLEAN,
        "complete": BOOLEAN,
        "revenue_source": shape({"source": nullable(enum("api", "processor")), "locked": BOOLEAN}),
        "processor": shape({"connected": BOOLEAN}),
        "webhook": shape({"configured": BOOLEAN, "disabled": BOOLEAN}),
        "first_click_at": nullable(TIMESTAMP),
        "first_identify_at": nullable(TIMESTAMP),
        "first_attributed_payment_at": nullable(TIMESTAMP),
        "unattributed_payments": INTEGER,
        "alarms": {
            "type": "array",
            "items": shape({"code": STRING, "message": STRING, "count": nullable(INTEGER)}),
        },
    }
)

#: Registered with the other response objects of :mod:`refcore_http.schemas` for the OpenAPI document.
SCHEMAS: dict[str, JsonObject] = {
    "AgreementVersion": _AGREEMENT,
    "AppAgreement": shape(
        {
            "object": {"const": "app_agreement"},
            "app_id": STRING,
            "current": nullable(ref("AgreementVersion")),
            "history": {"type": "array", "items": ref("AgreementVersion")},
            "has_more": BOOLEAN,
        }
    ),
    "AppLogo": shape(_LOGO_FIELDS),
    "DeletedAppLogo": shape({**_LOGO_FIELDS, "deleted": {"const": True}}),
    "SetupStatus": shape(
        {
            "object": {"const": "setup_status"},
            "app_id": STRING,
            "test": nullable(_MODE_SETUP),
            "live": nullable(_MODE_SETUP),
        }
    ),
    "AppOverview": shape(
        {
            "object": {"const": "app_overview"},
            "app_id": STRING,
            "livemode": BOOLEAN,
            "from": TIMESTAMP,
            "to": TIMESTAMP,
            "clicks": INTEGER,
            "referrals": INTEGER,
            "attributed_customers": INTEGER,
            "currencies": {
                "type": "array",
                "items": shape(
                    {
                        "currency": STRING,
                        "revenue": INTEGER,
                        "attributed_revenue": INTEGER,
                        "commissions_earned": INTEGER,
                        "commissions_reversed": INTEGER,
                        "commissions_reinstated": INTEGER,
                        "commissions_paid": INTEGER,
                    }
                ),
            },
        }
    ),
}
OBJECTS.update(SCHEMAS)
