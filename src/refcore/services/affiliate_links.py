"""An affiliate's own links, through its affiliate key (interface 4.4, decisions 1).

An affiliate key acts as exactly one program affiliate. Naming any other program, or any link
that is not that affiliate's own (another affiliate's, a deleted one), answers ``404`` as if it
did not exist, so a key reveals nothing about the rest of the App.

Links are created by :func:`refcore.services.affiliates.create_link_in`, the same code path as
Developer-managed links: codes are unique installation-wide and permanent. A pending affiliate
may prepare links (they attribute once it is approved); a disabled one may read and delete its
links but not create new ones (``409 state_conflict``), nor may any affiliate of a disabled
program, which has no way back.

An affiliate key creates at most :data:`PENDING_LINKS` links while its affiliate is pending and
:data:`OWN_LINKS` in all, deleted ones included. A code is taken for every App of the
installation, for good (a capture finds its link by the code alone), and anyone with a mailbox
can join a program and wait, pending, for approval: probe J made 40 links of 40 so, and reserved
another tenant's brand (``acme-partners``) that way. The Developer may add links for an
affiliate beyond the limit; they count toward it too.
"""

from __future__ import annotations

from attrs import evolve

from refcore.errors import NotFound, StateConflict
from refcore.models import AffiliateStatus, Link, ProgramAffiliate, ProgramStatus
from refcore.services.access import own_affiliate
from refcore.services.affiliates import create_link_in
from refcore.services.pagination import Page, paginate
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import require_line, require_link_code

#: Links a pending affiliate's key may create (see the module docstring).
PENDING_LINKS = 5
#: Links an affiliate's key may create in all, deleted ones included.
OWN_LINKS = 100


def _own_link(tx: Tx, affiliate: ProgramAffiliate, link_id: str, *, for_update: bool = False) -> Link:
    link = tx.uow.links.get(link_id, for_update=for_update)
    if link is None or link.program_affiliate_id != affiliate.id or link.deleted_at is not None:
        raise NotFound.of("link", link_id)
    return link


def list_own_links(
    rt: Runtime,
    principal: Principal,
    program_id: str,
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[Link]:
    """The affiliate's live links in the program, newest first.

    ``GET /v1/affiliate/programs/:programId/links``. Errors: ``forbidden`` (not an affiliate key),
    ``program_not_found``, ``validation_error`` (``limit``), ``invalid_starting_after``."""

    def work(tx: Tx) -> Page[Link]:
        affiliate = own_affiliate(tx, principal, program_id)
        return paginate(
            tx.uow.links,
            {"program_affiliate_id": affiliate.id, "deleted_at": None},
            prefix="lnk",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def create_own_link(
    rt: Runtime, principal: Principal, program_id: str, name: object, code: object = None
) -> Link:
    """A named link; ``code`` is generated when not given.

    ``POST /v1/affiliate/programs/:programId/links``. Errors: ``validation_error`` (``name``, ``code``,
    a code already taken), ``forbidden`` (not an affiliate key), ``program_not_found``,
    ``state_conflict`` (a disabled affiliate or program; the affiliate's links at their limit)."""
    link_name = require_line(name, param="name")
    link_code = None if code is None else require_link_code(code)

    def work(tx: Tx) -> Link:
        # Locked, so that two concurrent creations count the affiliate's links one after the other.
        affiliate = own_affiliate(tx, principal, program_id, for_update=True)
        if affiliate.status is AffiliateStatus.DISABLED:
            raise StateConflict("A disabled affiliate cannot create links")
        program = tx.uow.programs.get(affiliate.program_id)
        if program is None or program.status is ProgramStatus.DISABLED:
            raise StateConflict("The program is disabled: its affiliates cannot create links")
        _require_room_for_a_link(tx, affiliate)
        return create_link_in(tx, affiliate, link_code, link_name)

    return rt.transaction(work)


def _require_room_for_a_link(tx: Tx, affiliate: ProgramAffiliate) -> None:
    """Errors: ``state_conflict`` when the affiliate's links are at their limit (module docstring).
    The caller holds the affiliate's row locked."""
    limit = PENDING_LINKS if affiliate.status is AffiliateStatus.PENDING else OWN_LINKS
    if tx.uow.metrics().count("links", {"program_affiliate_id": affiliate.id}) >= limit:
        while_pending = " while it is pending" if affiliate.status is AffiliateStatus.PENDING else ""
        raise StateConflict(
            f"An affiliate can create at most {limit} links{while_pending}, deleted ones included"
        )


def get_own_link(rt: Runtime, principal: Principal, program_id: str, link_id: str) -> Link:
    """One of the affiliate key's own live links in ``program_id``
    (``GET /v1/affiliate/programs/:programId/links/:linkId``); a deleted link or another affiliate's is
    not found, so a key learns nothing about the rest of the App.

    Errors: ``forbidden`` (not an affiliate key), ``program_not_found``, ``link_not_found``."""

    def work(tx: Tx) -> Link:
        return _own_link(tx, own_affiliate(tx, principal, program_id), link_id)

    return rt.read(work)


def delete_own_link(rt: Runtime, principal: Principal, program_id: str, link_id: str) -> Link:
    """The link stops attributing; its code stays reserved (a published URL never changes owner).

    ``DELETE /v1/affiliate/programs/:programId/links/:linkId``. Errors: ``forbidden`` (not an affiliate
    key), ``program_not_found``, ``link_not_found``."""

    def work(tx: Tx) -> Link:
        link = _own_link(tx, own_affiliate(tx, principal, program_id), link_id, for_update=True)
        link = evolve(link, deleted_at=tx.now)
        tx.uow.links.replace(link)
        return link

    return rt.transaction(work)
