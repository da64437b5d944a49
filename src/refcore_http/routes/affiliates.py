"""Program affiliates and their Developer-managed links (interface 4.3, 4.4; decisions 2).

Added by the Developer, an affiliate starts ``active``. A link code is permanent: ``PATCH``
changes only the name, and a deleted link keeps its code reserved.
"""

from __future__ import annotations

from attrs import field, frozen

from refcore.errors import ValidationError
from refcore.models import AffiliateStatus
from refcore.representation import represent
from refcore.services import affiliates, lookups
from refcore.validation import require_choice
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


@frozen
class ProgramAffiliateBody:
    """An affiliate added (invited) by the Developer; starts active."""

    program_id: str
    email: str
    name: str


@frozen
class LinkBody:
    """A link of a Developer-managed affiliate; ``code`` is generated when not given."""

    code: str | None = field(
        default=None,
        metadata={"description": "The via value: 3-64 of a-z, 0-9, _ and - (case-insensitive, unique)"},
    )
    name: str | None = None


@frozen
class LinkPatch:
    """Only the name of a link changes; its code is permanent."""

    name: str | None = field(default=None, metadata={"description": "null removes the name"})


def invite_program_affiliate(call: Call) -> Reply:
    body: ProgramAffiliateBody = call.body
    affiliate = affiliates.add_program_affiliate(
        call.runtime, call.who, body.program_id, body.email, body.name
    )
    return created(represent(affiliate))


def list_program_affiliates(call: Call) -> Reply:
    program_id = call.query.get("program_id")
    if program_id is None:
        raise ValidationError("program_id is required", param="program_id")
    status = call.query.get("status")
    page = affiliates.list_program_affiliates(
        call.runtime,
        call.who,
        program_id,
        status=None if status is None else require_choice(status, AffiliateStatus, param="status").value,
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def get_program_affiliate(call: Call) -> Reply:
    return ok(represent(affiliates.get_program_affiliate(call.runtime, call.who, call.params["id"])))


def approve_program_affiliate(call: Call) -> Reply:
    return ok(represent(affiliates.approve(call.runtime, call.who, call.params["id"])))


def disable_program_affiliate(call: Call) -> Reply:
    return ok(represent(affiliates.disable(call.runtime, call.who, call.params["id"])))


def enable_program_affiliate(call: Call) -> Reply:
    return ok(represent(affiliates.enable(call.runtime, call.who, call.params["id"])))


def list_links(call: Call) -> Reply:
    page = affiliates.list_links(
        call.runtime,
        call.who,
        call.params["id"],
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def create_link(call: Call) -> Reply:
    body: LinkBody = call.body
    link = affiliates.create_link(call.runtime, call.who, call.params["id"], code=body.code, name=body.name)
    return created(represent(link))


def get_link(call: Call) -> Reply:
    return ok(represent(lookups.get_link(call.runtime, call.who, call.params["id"], call.params["linkId"])))


def update_link(call: Call) -> Reply:
    body: LinkPatch = call.body
    affiliate_id, link_id = call.params["id"], call.params["linkId"]
    if "name" not in call.sent:
        return ok(represent(lookups.get_link(call.runtime, call.who, affiliate_id, link_id)))
    return ok(represent(affiliates.update_link(call.runtime, call.who, affiliate_id, link_id, body.name)))


def delete_link(call: Call) -> Reply:
    link = affiliates.delete_link(call.runtime, call.who, call.params["id"], call.params["linkId"])
    return ok({**represent(link), "deleted": True})


_TAGS = ("affiliates",)

ROUTES = (
    Endpoint(
        "GET",
        "/v1/program-affiliates",
        "List a program's affiliates",
        list_program_affiliates,
        DEVELOPER,
        returns_list("ProgramAffiliate"),
        query=(
            QueryParam("program_id", "The program whose affiliates are listed", required=True),
            QueryParam("status", "Only affiliates in this status", enum=("pending", "active", "disabled")),
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/program-affiliates",
        "Add (invite) an affiliate to a program",
        invite_program_affiliate,
        DEVELOPER,
        returns("ProgramAffiliate", 201),
        body=ProgramAffiliateBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/program-affiliates/:id",
        "Read a program affiliate",
        get_program_affiliate,
        DEVELOPER,
        returns("ProgramAffiliate"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/program-affiliates/:id/approve",
        "Approve a pending affiliate",
        approve_program_affiliate,
        DEVELOPER,
        returns("ProgramAffiliate"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/program-affiliates/:id/disable",
        "Disable an affiliate",
        disable_program_affiliate,
        DEVELOPER,
        returns("ProgramAffiliate"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/program-affiliates/:id/enable",
        "Re-enable a disabled affiliate (back to its status before)",
        enable_program_affiliate,
        DEVELOPER,
        returns("ProgramAffiliate"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/program-affiliates/:id/links",
        "List an affiliate's links",
        list_links,
        DEVELOPER,
        returns_list("Link"),
        query=PAGING,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/program-affiliates/:id/links",
        "Create a link for an affiliate",
        create_link,
        DEVELOPER,
        returns("Link", 201),
        body=LinkBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/program-affiliates/:id/links/:linkId",
        "Read a link",
        get_link,
        DEVELOPER,
        returns("Link"),
        tags=_TAGS,
    ),
    Endpoint(
        "PATCH",
        "/v1/program-affiliates/:id/links/:linkId",
        "Rename a link",
        update_link,
        DEVELOPER,
        returns("Link"),
        body=LinkPatch,
        tags=_TAGS,
    ),
    Endpoint(
        "DELETE",
        "/v1/program-affiliates/:id/links/:linkId",
        "Delete a link (its code stays reserved)",
        delete_link,
        DEVELOPER,
        returns("DeletedLink"),
        tags=_TAGS,
    ),
)
