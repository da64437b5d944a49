"""Affiliate self-service: an affiliate's own named links, with its affiliate key (interface 4.4).

``key_aff_…`` keys are issued by the hosted signup (:mod:`refcore_http.routes.join`). A key acts
as one program affiliate: another program, or a link that is not its own, is ``404`` as if it
did not exist.
"""

from __future__ import annotations

from attrs import field, frozen

from refcore.representation import represent
from refcore.services import affiliate_links
from refcore.services.principal import PrincipalKind
from refcore_http.endpoints import (
    PAGING,
    Access,
    Call,
    Endpoint,
    Reply,
    created,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import listing

AFFILIATE = Access(
    "affiliate_key",
    frozenset({PrincipalKind.AFFILIATE_KEY}),
    description="an affiliate key (key_aff_…)",
)


@frozen
class NamedLinkBody:
    """A named link of the calling affiliate; ``code`` is generated when not given."""

    name: str = field(metadata={"description": "What the affiliate calls this link"})
    code: str | None = field(
        default=None,
        metadata={"description": "The via value: 3-64 of a-z, 0-9, _ and - (case-insensitive, unique)"},
    )


def list_own_links(call: Call) -> Reply:
    page = affiliate_links.list_own_links(
        call.runtime,
        call.who,
        call.params["programId"],
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def create_own_link(call: Call) -> Reply:
    body: NamedLinkBody = call.body
    link = affiliate_links.create_own_link(
        call.runtime, call.who, call.params["programId"], body.name, body.code
    )
    return created(represent(link))


def get_own_link(call: Call) -> Reply:
    return ok(
        represent(
            affiliate_links.get_own_link(
                call.runtime, call.who, call.params["programId"], call.params["linkId"]
            )
        )
    )


def delete_own_link(call: Call) -> Reply:
    link = affiliate_links.delete_own_link(
        call.runtime, call.who, call.params["programId"], call.params["linkId"]
    )
    return ok({**represent(link), "deleted": True})


_TAGS = ("affiliate self-service",)

ROUTES = (
    Endpoint(
        "GET",
        "/v1/affiliate/programs/:programId/links",
        "List the calling affiliate's links in a program",
        list_own_links,
        AFFILIATE,
        returns_list("Link"),
        query=PAGING,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/affiliate/programs/:programId/links",
        "Create a named link",
        create_own_link,
        AFFILIATE,
        returns("Link", 201),
        body=NamedLinkBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/affiliate/programs/:programId/links/:linkId",
        "Read one of the calling affiliate's links",
        get_own_link,
        AFFILIATE,
        returns("Link"),
        tags=_TAGS,
    ),
    Endpoint(
        "DELETE",
        "/v1/affiliate/programs/:programId/links/:linkId",
        "Delete a named link (its code stays reserved)",
        delete_own_link,
        AFFILIATE,
        returns("DeletedLink"),
        tags=_TAGS,
    ),
)
