"""Programs, their terms, and pause / resume / disable (interface 4.3, decisions 2)."""

from __future__ import annotations

from typing import Any, Literal

from attrs import asdict, field, frozen

from refcore.errors import ValidationError
from refcore.representation import JsonObject, represent
from refcore.services import lookups, programs
from refcore_http.endpoints import (
    DEVELOPER,
    PAGING,
    Call,
    Endpoint,
    QueryParam,
    Reply,
    created,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import listing
from refcore_http.schemas import PATCH


@frozen
class PercentCommission:
    """A share of each payment, in basis points (0 to 10000)."""

    type: Literal["percent"]
    bps: int = field(metadata={"minimum": 0, "maximum": 10000})


@frozen
class FixedCommission:
    """A fixed amount per payment in minor units (never more than the payment)."""

    type: Literal["fixed"]
    amount: int = field(metadata={"minimum": 0, "maximum": 2**31 - 1})


Commission = PercentCommission | FixedCommission

_DURATION = "Months a referral earns after identify; null: for its lifetime"


@frozen
class ProgramBody:
    """A new program of an App (decisions 2)."""

    app_id: str
    name: str
    slug: str = field(
        metadata={
            "description": "Unique (join page); ASCII letters, digits, hyphens; any case, stored lower-case",
            "pattern": "^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?$",
        }
    )
    currency: str = field(metadata={"description": "Lowercase ISO 4217", "pattern": "^[a-z]{3}$"})
    commission: Commission
    commission_duration_months: int | None = field(
        default=None, metadata={"description": _DURATION, "minimum": 1, "maximum": 1200}
    )
    attribution_window_days: int = field(default=60, metadata={"minimum": 1, "maximum": 3650})
    hold_days: int = field(default=30, metadata={"minimum": 0, "maximum": 3650})
    minimum_payout: int = field(default=0, metadata={"minimum": 0, "maximum": 2**31 - 1})
    auto_approve: bool = False
    promotion_code_fallback: bool = False


@frozen
class ProgramPatch:
    """Changes to a program's settings; only the fields sent change."""

    name: str | None = field(default=None, metadata=PATCH)
    commission: Commission | None = field(default=None, metadata=PATCH)
    commission_duration_months: int | None = field(
        default=None, metadata={"description": _DURATION, "minimum": 1, "maximum": 1200}
    )
    attribution_window_days: int | None = field(
        default=None, metadata={**PATCH, "minimum": 1, "maximum": 3650}
    )
    hold_days: int | None = field(default=None, metadata={**PATCH, "minimum": 0, "maximum": 3650})
    minimum_payout: int | None = field(default=None, metadata={**PATCH, "minimum": 0, "maximum": 2**31 - 1})
    auto_approve: bool | None = field(default=None, metadata=PATCH)
    promotion_code_fallback: bool | None = field(default=None, metadata=PATCH)


@frozen
class TermsBody:
    """A new version of the program's terms; the newest is current."""

    text: str


def _values(call: Call) -> dict[str, Any]:
    """The fields the caller sent, as plain values (commission back to its JSON object)."""
    out: dict[str, Any] = {}
    for name in call.sent:
        value = getattr(call.body, name)
        out[name] = asdict(value) if isinstance(value, PercentCommission | FixedCommission) else value
    return out


def create_program(call: Call) -> Reply:
    return created(represent(programs.create_program(call.runtime, call.who, _values(call))))


def list_programs(call: Call) -> Reply:
    app_id = call.query.get("app_id") or call.who.app_id
    if app_id is None:
        raise ValidationError("app_id is required with a session", param="app_id")
    page = programs.list_programs(
        call.runtime,
        call.who,
        app_id,
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def get_program(call: Call) -> Reply:
    return ok(represent(programs.get_program(call.runtime, call.who, call.params["id"])))


def update_program(call: Call) -> Reply:
    return ok(represent(programs.update_program(call.runtime, call.who, call.params["id"], _values(call))))


def _status_action(action: str) -> Any:
    def change(call: Call) -> Reply:
        program = programs.change_program_status(call.runtime, call.who, call.params["id"], action)
        return ok(represent(program))

    change.__name__ = f"{action}_program"
    return change


def list_terms(call: Call) -> Reply:
    program_id = call.params["id"]
    versions = programs.list_terms(
        call.runtime,
        call.who,
        program_id,
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    body: JsonObject = {
        "object": "program_terms_history",
        "program_id": program_id,
        "current": represent(versions.current) if versions.current else None,
        "history": [represent(t) for t in versions.page.data],
        "has_more": versions.page.has_more,
    }
    return ok(body)


def publish_terms(call: Call) -> Reply:
    body: TermsBody = call.body
    return created(represent(programs.publish_terms(call.runtime, call.who, call.params["id"], body.text)))


def get_terms(call: Call) -> Reply:
    terms = lookups.get_terms(call.runtime, call.who, call.params["id"], call.params["termsId"])
    return ok(represent(terms))


_TAGS = ("programs",)

ROUTES = (
    Endpoint(
        "GET",
        "/v1/programs",
        "List an App's programs",
        list_programs,
        DEVELOPER,
        returns_list("Program"),
        query=(QueryParam("app_id", "The App (sessions; App keys default to their App)"), *PAGING),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/programs",
        "Create a program",
        create_program,
        DEVELOPER,
        returns("Program", 201),
        body=ProgramBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET", "/v1/programs/:id", "Read a program", get_program, DEVELOPER, returns("Program"), tags=_TAGS
    ),
    Endpoint(
        "PATCH",
        "/v1/programs/:id",
        "Update a program's settings",
        update_program,
        DEVELOPER,
        returns("Program"),
        body=ProgramPatch,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/programs/:id/terms",
        "Read the current terms and a page of their history (newest first)",
        list_terms,
        DEVELOPER,
        returns("ProgramTermsHistory"),
        query=PAGING,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/programs/:id/terms",
        "Publish a new version of the terms",
        publish_terms,
        DEVELOPER,
        returns("ProgramTerms", 201),
        body=TermsBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/programs/:id/terms/:termsId",
        "Read one version of the terms",
        get_terms,
        DEVELOPER,
        returns("ProgramTerms"),
        tags=_TAGS,
    ),
    *(
        Endpoint(
            "POST",
            f"/v1/programs/:id/{action}",
            f"{action.capitalize()} the program",
            _status_action(action),
            DEVELOPER,
            returns("Program"),
            tags=_TAGS,
            description="Out of order (e.g. resume an active program) is 409 state_conflict.",
        )
        for action in ("pause", "resume", "disable")
    ),
)
