"""Hosted join (interface 4.4; decisions 6, 11): three public routes, no credential.

- ``GET /v1/join/:programSlug``: the page data (program, current terms, the App's name, logo URL
  and current agreement).
- ``POST /v1/join/:programSlug`` ``{email, name}``: ``202``; a confirmation link is mailed through
  ``REFCORE_MAILER``. The answer is the same for every address and never holds the token.
- ``POST /v1/join/:programSlug/confirm`` ``{token}``: ``201`` with the new program affiliate and
  its affiliate key (the secret, shown this once).

Rules and their settings are in :mod:`refcore.services.join` and docs/api.md ("Hosted join").
"""

from __future__ import annotations

from attrs import field, frozen

from refcore.models import Program
from refcore.ports.mailer import Mailer
from refcore.representation import JsonObject, represent, represent_commission_terms, timestamp
from refcore.services import join
from refcore.services.join import JoinPolicy
from refcore_http.endpoints import (
    NO_CONTENT,
    NO_STORE,
    PUBLIC,
    Call,
    Endpoint,
    Output,
    Reply,
    created,
    ok,
    returns,
)
from refcore_http.mailers import open_mailer
from refcore_http.routes.app_profile import logo_url, represent_agreement
from refcore_http.schemas import BOOLEAN, INTEGER, OBJECTS, STRING, TIMESTAMP, enum, nullable, ref, shape
from refcore_http.settings import Settings


@frozen
class JoinBody:
    """A request to join a program; a confirmation link is mailed to ``email``."""

    email: str = field(metadata={"description": "Where the confirmation link is sent"})
    name: str = field(metadata={"description": "The affiliate's name as the App will see it"})


@frozen
class ConfirmBody:
    """The token from the confirmation link (its ``token`` query parameter)."""

    token: str


def _default_confirm_url(settings: Settings) -> str:
    """This server's own confirm page; an IPv6 host in brackets, as a URL must write it (with
    ``REFCORE_HOST=::`` the link had read ``http://:::8000/…``)."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return f"http://{host}:{settings.port}/join/{{slug}}/confirm"


def join_policy(settings: Settings) -> JoinPolicy:
    confirm_url = settings.join_confirm_url or _default_confirm_url(settings)
    return JoinPolicy(
        per_email=settings.join_limit_per_email,
        per_ip=settings.join_limit_per_ip,
        confirm_url=confirm_url,
    )


def mailer_of(settings: Settings) -> Mailer:
    return open_mailer(settings.mailer, settings.mail_from)


def _public_program(program: Program) -> JsonObject:
    """What an applicant may know of a program (no internal switches such as code fallback)."""
    return {
        "id": program.id,
        "object": "program",
        "created_at": timestamp(program.created_at),
        "name": program.name,
        "slug": program.slug,
        "currency": program.currency,
        "commission": represent_commission_terms(program.commission),
        "commission_duration_months": program.commission_duration_months,
        "attribution_window_days": program.attribution_window_days,
        "hold_days": program.hold_days,
        "minimum_payout": program.minimum_payout,
        "auto_approve": program.auto_approve,
        "status": program.status.value,
    }


def show_join_page(call: Call) -> Reply:
    page = join.join_page(call.runtime, call.params["programSlug"])
    return ok(
        {
            "object": "join_page",
            "program": _public_program(page.program),
            "terms": represent(page.terms) if page.terms is not None else None,
            "app": {
                "id": page.app.id,
                "name": page.app.name,
                "logo_url": logo_url(page.logo) if page.logo is not None else None,
            },
            "agreement": represent_agreement(page.agreement) if page.agreement is not None else None,
        }
    )


def start_join(call: Call) -> Reply:
    body: JoinBody = call.body
    accepted = join.start_signup(
        call.runtime,
        mailer_of(call.settings),
        call.params["programSlug"],
        body.email,
        body.name,
        client_ip=call.visitor.ip,
        policy=join_policy(call.settings),
    )
    return Reply(
        body={
            "object": "join_request",
            "program_id": accepted.program_id,
            "email": accepted.email,
            "expires_at": timestamp(accepted.expires_at),
        },
        status=202,
    )


def confirm_join(call: Call) -> Reply:
    body: ConfirmBody = call.body
    joined = join.confirm_signup(call.runtime, call.params["programSlug"], body.token)
    return created(
        {
            "object": "join_confirmation",
            "program_affiliate": represent(joined.affiliate),
            "api_key": {**represent(joined.key.key), "secret": joined.key.secret},
        },
        headers=NO_STORE,
    )


def join_page_preflight(call: Call) -> Reply:
    """CORS preflight of the App's sign-up page (:mod:`refcore_http.cors`); the dispatcher adds
    the Access-Control headers."""
    return Reply(body=None, status=204)


def join_confirm_preflight(call: Call) -> Reply:
    """As :func:`join_page_preflight`, for the confirmation the page posts."""
    return Reply(body=None, status=204)


_TAGS = ("join",)
_BROWSERS = " Browsers on any origin may call it (CORS; REFCORE_CORS_ALLOW_ORIGIN names one instead)."

ROUTES = (
    Endpoint(
        "GET",
        "/v1/join/:programSlug",
        "The hosted join page's data",
        show_join_page,
        PUBLIC,
        returns("JoinPage"),
        cors=True,
        tags=_TAGS,
        description="Public. A disabled program has no join page (404 program_not_found)." + _BROWSERS,
    ),
    Endpoint(
        "POST",
        "/v1/join/:programSlug",
        "Ask to join a program (a confirmation link is e-mailed)",
        start_join,
        PUBLIC,
        Output(schema="JoinRequest", statuses=(202,), errors=(429,)),
        body=JoinBody,
        cors=True,
        tags=_TAGS,
        description="Public. Rate-limited per e-mail address and per client IP (429 rate_limited). "
        "The answer never contains the token: only the mailbox owner receives it." + _BROWSERS,
    ),
    Endpoint(
        "OPTIONS",
        "/v1/join/:programSlug",
        "CORS preflight for the App's sign-up page",
        join_page_preflight,
        PUBLIC,
        NO_CONTENT,
        cors=True,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/join/:programSlug/confirm",
        "Confirm a signup: creates the affiliate and returns its key once",
        confirm_join,
        PUBLIC,
        returns("JoinConfirmation", 201),
        body=ConfirmBody,
        cors=True,
        tags=_TAGS,
        description="Public. An unknown, expired (24 h) or already used token is 400 invalid_signup_token."
        + _BROWSERS,
    ),
    Endpoint(
        "OPTIONS",
        "/v1/join/:programSlug/confirm",
        "CORS preflight for the App's sign-up page",
        join_confirm_preflight,
        PUBLIC,
        NO_CONTENT,
        cors=True,
        tags=_TAGS,
    ),
)

_PUBLIC_PROGRAM = shape(
    {
        "id": STRING,
        "object": {"const": "program"},
        "created_at": TIMESTAMP,
        "name": STRING,
        "slug": STRING,
        "currency": STRING,
        "commission": {"type": "object"},
        "commission_duration_months": nullable(INTEGER),
        "attribution_window_days": INTEGER,
        "hold_days": INTEGER,
        "minimum_payout": INTEGER,
        "auto_approve": BOOLEAN,
        "status": enum("active", "paused", "disabled"),
    }
)

#: Registered with the other response objects of :mod:`refcore_http.schemas` for the OpenAPI document.
SCHEMAS: dict[str, JsonObject] = {
    "JoinPage": shape(
        {
            "object": {"const": "join_page"},
            "program": _PUBLIC_PROGRAM,
            "terms": nullable(ref("ProgramTerms")),
            "app": shape({"id": STRING, "name": STRING, "logo_url": nullable(STRING)}),
            "agreement": nullable(ref("AgreementVersion")),
        }
    ),
    "JoinRequest": shape(
        {"object": {"const": "join_request"}, "program_id": STRING, "email": STRING, "expires_at": TIMESTAMP}
    ),
    "JoinConfirmation": shape(
        {
            "object": {"const": "join_confirmation"},
            "program_affiliate": ref("ProgramAffiliate"),
            "api_key": shape(
                {
                    "id": STRING,
                    "object": {"const": "api_key"},
                    "created_at": TIMESTAMP,
                    "app_id": STRING,
                    "kind": {"const": "affiliate"},
                    "mode": {"const": "live"},
                    "last4": STRING,
                    "revoked_at": {"type": "null"},
                    "program_affiliate_id": STRING,
                    "secret": {"type": "string", "pattern": "^key_aff_"},
                }
            ),
        }
    ),
}
OBJECTS.update(SCHEMAS)
