"""Single reads of configuration resources that have an ID but no reader elsewhere (decisions 11).

Every resource with an ID answers ``GET`` on its own path; the services that create API keys,
links and terms only list them, so their single reads live here, with the same access rules as
their lists (another tenant's resource is ``404`` as if it did not exist).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from refcore.errors import Forbidden, NotFound
from refcore.identifiers import prefix_of
from refcore.models import ApiKey, Link, Organization, ProgramTerms
from refcore.services.access import require_app, require_program, require_program_affiliate
from refcore.services.pagination import Page, not_of_this_list, require_limit
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.services.tenancy import list_organizations


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_Identified)


def get_api_key(rt: Runtime, principal: Principal, key_id: str) -> ApiKey:
    """Session only, like the list; the secret itself was shown once and is not stored.

    ``GET /v1/api-keys/:id``. Errors: ``forbidden`` (not a session), ``api_key_not_found``."""
    if not principal.is_session:
        raise Forbidden("This operation needs a dashboard session")

    def work(tx: Tx) -> ApiKey:
        key = tx.uow.api_keys.get(key_id)
        if key is None:
            raise NotFound.of("api_key", key_id)
        try:
            require_app(tx, principal, key.app_id)
        except NotFound:
            raise NotFound.of("api_key", key_id) from None
        return key

    return rt.read(work)


def get_link(rt: Runtime, principal: Principal, affiliate_id: str, link_id: str) -> Link:
    """A live (not deleted) link of the program affiliate.

    ``GET /v1/program-affiliates/:id/links/:linkId``. Errors: ``program_affiliate_not_found``,
    ``link_not_found``."""

    def work(tx: Tx) -> Link:
        require_program_affiliate(tx, principal, affiliate_id)
        link = tx.uow.links.get(link_id)
        if link is None or link.program_affiliate_id != affiliate_id or link.deleted_at is not None:
            raise NotFound.of("link", link_id)
        return link

    return rt.read(work)


def get_terms(rt: Runtime, principal: Principal, program_id: str, terms_id: str) -> ProgramTerms:
    """One published version of a program's terms.

    ``GET /v1/programs/:id/terms/:termsId``. Errors: ``program_not_found``, ``program_terms_not_found``."""

    def work(tx: Tx) -> ProgramTerms:
        require_program(tx, principal, program_id)
        terms = tx.uow.program_terms.get(terms_id)
        if terms is None or terms.program_id != program_id:
            raise NotFound.of("program_terms", terms_id)
        return terms

    return rt.read(work)


def page_of(
    items: Sequence[T], *, prefix: str, limit: object = None, starting_after: str | None = None
) -> Page[T]:
    """Decisions 9 over a short list already read whole, newest first (a user's organizations).

    Errors: ``validation_error`` (``limit``), ``invalid_starting_after``."""
    size = require_limit(limit)
    start = 0
    if starting_after is not None:
        positions = [i for i, item in enumerate(items) if item.id == starting_after]
        if prefix_of(starting_after) != prefix or not positions:
            raise not_of_this_list()
        start = positions[0] + 1
    rest = items[start:]
    return Page(data=list(rest[:size]), has_more=len(rest) > size)


def page_organizations(
    rt: Runtime, principal: Principal, *, limit: object = None, starting_after: str | None = None
) -> Page[Organization]:
    """One page of the session's organizations, newest first (``GET /v1/organizations``). A user has few,
    so they are read whole and paged in memory (:func:`page_of`).

    Errors: ``forbidden`` (not a session), ``validation_error`` (``limit``), ``invalid_starting_after``."""
    return page_of(
        list_organizations(rt, principal), prefix="org", limit=limit, starting_after=starting_after
    )
