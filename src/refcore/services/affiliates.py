"""Program affiliates and their links (decisions 2)."""

from __future__ import annotations

from attrs import evolve

from refcore.credentials import shown
from refcore.errors import NotFound, StateConflict, ValidationError
from refcore.models import AffiliateStatus, EventType, Link, ProgramAffiliate
from refcore.representation import represent
from refcore.services.access import require_program, require_program_affiliate
from refcore.services.pagination import Page, paginate
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import (
    kept_address,
    optional_line,
    require_choice,
    require_line,
    require_link_code,
    require_text,
)


def emit_affiliate_event(tx: Tx, type: EventType, affiliate: ProgramAffiliate) -> None:
    """``affiliate.*`` events are always ``livemode: true`` (configuration is shared by modes)."""
    tx.emit(type, app_id=affiliate.app_id, livemode=True, data=represent(affiliate))


def create_affiliate(
    tx: Tx, *, program_id: str, app_id: str, email: str, name: str, status: AffiliateStatus
) -> ProgramAffiliate:
    """Add an affiliate inside a unit of work; shared by the Developer route and hosted signup.

    Emits ``affiliate.created``. Errors: ``validation_error`` (the address is already an affiliate of
    the program)."""
    existing = tx.uow.program_affiliates.find_one({"program_id": program_id, "email": email})
    if existing is not None:
        raise ValidationError(f"{email} is already an affiliate of this program", param="email")
    affiliate = ProgramAffiliate(
        id=tx.new_id("aff"),
        app_id=app_id,
        program_id=program_id,
        email=email,
        name=name,
        status=status,
        created_at=tx.now,
    )
    tx.uow.program_affiliates.add(affiliate)
    emit_affiliate_event(tx, EventType.AFFILIATE_CREATED, affiliate)
    return affiliate


def add_program_affiliate(
    rt: Runtime, principal: Principal, program_id: object, email: object, name: object
) -> ProgramAffiliate:
    """Added by the Developer, an affiliate starts ``active``.

    ``POST /v1/program-affiliates``; emits ``affiliate.created``. It issues no key: the affiliate gets
    one through hosted join (:mod:`refcore.services.join`).

    Errors: ``validation_error`` (``program_id``, ``email``, ``name``; an address already in the
    program), ``program_not_found``."""
    program_ref = require_text(program_id, param="program_id")
    address = kept_address(email)
    display = require_line(name, param="name")

    def work(tx: Tx) -> ProgramAffiliate:
        program = require_program(tx, principal, program_ref)
        return create_affiliate(
            tx,
            program_id=program.id,
            app_id=program.app_id,
            email=address,
            name=display,
            status=AffiliateStatus.ACTIVE,
        )

    return rt.transaction(work)


def get_program_affiliate(rt: Runtime, principal: Principal, affiliate_id: str) -> ProgramAffiliate:
    """A program affiliate by ID (``GET /v1/program-affiliates/:id``), for a session or App key of its App.

    Errors: ``program_affiliate_not_found``."""
    return rt.read(lambda tx: require_program_affiliate(tx, principal, affiliate_id))


def list_program_affiliates(
    rt: Runtime,
    principal: Principal,
    program_id: str,
    *,
    status: str | None = None,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[ProgramAffiliate]:
    """One page of a program's affiliates, newest first, optionally of one ``status``
    (``GET /v1/program-affiliates?program_id=``).

    Errors: ``validation_error`` (``status``, ``limit``), ``program_not_found``,
    ``invalid_starting_after``."""
    where: dict[str, object] = {"program_id": program_id}
    if status is not None:
        where["status"] = require_choice(status, AffiliateStatus, param="status")

    def work(tx: Tx) -> Page[ProgramAffiliate]:
        require_program(tx, principal, program_id)
        return paginate(
            tx.uow.program_affiliates,
            where,
            prefix="aff",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def approve(rt: Runtime, principal: Principal, affiliate_id: str) -> ProgramAffiliate:
    """``pending`` to ``active``, emitting ``affiliate.approved``
    (``POST /v1/program-affiliates/:id/approve``). The row is locked first, so two concurrent approvals
    approve once and the second is refused.

    Errors: ``program_affiliate_not_found``, ``state_conflict`` (not pending)."""

    def work(tx: Tx) -> ProgramAffiliate:
        affiliate = require_program_affiliate(tx, principal, affiliate_id, for_update=True)
        if affiliate.status is not AffiliateStatus.PENDING:
            raise StateConflict(
                f"Only pending affiliates can be approved; this one is {affiliate.status.value}"
            )
        affiliate = evolve(affiliate, status=AffiliateStatus.ACTIVE)
        tx.uow.program_affiliates.replace(affiliate)
        emit_affiliate_event(tx, EventType.AFFILIATE_APPROVED, affiliate)
        return affiliate

    return rt.transaction(work)


def disable(rt: Runtime, principal: Principal, affiliate_id: str) -> ProgramAffiliate:
    """Any status but ``disabled`` to ``disabled``, emitting ``affiliate.disabled``
    (``POST /v1/program-affiliates/:id/disable``). The status it had is kept, so that :func:`enable`
    restores it; meanwhile the payments attributed to it earn nothing (:mod:`refcore.rules.earning`).

    Errors: ``program_affiliate_not_found``, ``state_conflict`` (already disabled)."""

    def work(tx: Tx) -> ProgramAffiliate:
        affiliate = require_program_affiliate(tx, principal, affiliate_id, for_update=True)
        if affiliate.status is AffiliateStatus.DISABLED:
            raise StateConflict("The affiliate is already disabled")
        affiliate = evolve(affiliate, status=AffiliateStatus.DISABLED, status_before_disable=affiliate.status)
        tx.uow.program_affiliates.replace(affiliate)
        emit_affiliate_event(tx, EventType.AFFILIATE_DISABLED, affiliate)
        return affiliate

    return rt.transaction(work)


def enable(rt: Runtime, principal: Principal, affiliate_id: str) -> ProgramAffiliate:
    """Back to the status the affiliate had before it was disabled.

    ``POST /v1/program-affiliates/:id/enable``; no event (interface 3.3 names none). Errors:
    ``program_affiliate_not_found``, ``state_conflict`` (not disabled)."""

    def work(tx: Tx) -> ProgramAffiliate:
        affiliate = require_program_affiliate(tx, principal, affiliate_id, for_update=True)
        if affiliate.status is not AffiliateStatus.DISABLED:
            raise StateConflict("Only disabled affiliates can be enabled")
        restored = affiliate.status_before_disable or AffiliateStatus.ACTIVE
        affiliate = evolve(affiliate, status=restored, status_before_disable=None)
        tx.uow.program_affiliates.replace(affiliate)
        return affiliate

    return rt.transaction(work)


# -- links -----------------------------------------------------------------------------------


def create_link_in(tx: Tx, affiliate: ProgramAffiliate, code: str | None, name: str | None) -> Link:
    """Create a link inside a unit of work; codes are unique installation-wide, case-insensitively.

    Errors: ``validation_error`` (the code is taken)."""
    if code is None:
        code = tx.new_id("x")[-10:]
    elif tx.uow.links.find_one({"code": code}) is not None:
        raise ValidationError(f"code {shown(code)} is taken", param="code")
    link = Link(
        id=tx.new_id("lnk"),
        app_id=affiliate.app_id,
        program_id=affiliate.program_id,
        program_affiliate_id=affiliate.id,
        code=code,
        name=name,
        created_at=tx.now,
    )
    tx.uow.links.add(link)
    return link


def create_link(
    rt: Runtime, principal: Principal, affiliate_id: str, code: object = None, name: object = None
) -> Link:
    """A link of the program affiliate (``POST /v1/program-affiliates/:id/links``); ``code`` is generated
    when not given. Codes are unique installation-wide because a capture finds its link by the code
    alone.

    Errors: ``validation_error`` (``code``, ``name``; a code already taken),
    ``program_affiliate_not_found``."""
    link_code = None if code is None else require_link_code(code)
    link_name = optional_line(name, param="name")

    def work(tx: Tx) -> Link:
        affiliate = require_program_affiliate(tx, principal, affiliate_id)
        return create_link_in(tx, affiliate, link_code, link_name)

    return rt.transaction(work)


def list_links(
    rt: Runtime,
    principal: Principal,
    affiliate_id: str,
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[Link]:
    """One page of the program affiliate's live (not deleted) links, newest first
    (``GET /v1/program-affiliates/:id/links``).

    Errors: ``program_affiliate_not_found``, ``validation_error`` (``limit``),
    ``invalid_starting_after``."""

    def work(tx: Tx) -> Page[Link]:
        require_program_affiliate(tx, principal, affiliate_id)
        return paginate(
            tx.uow.links,
            {"program_affiliate_id": affiliate_id, "deleted_at": None},
            prefix="lnk",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def _require_link(tx: Tx, principal: Principal, affiliate_id: str, link_id: str) -> Link:
    require_program_affiliate(tx, principal, affiliate_id)
    link = tx.uow.links.get(link_id, for_update=True)
    if link is None or link.program_affiliate_id != affiliate_id or link.deleted_at is not None:
        raise NotFound.of("link", link_id)
    return link


def update_link(rt: Runtime, principal: Principal, affiliate_id: str, link_id: str, name: object) -> Link:
    """Only the name changes; a code is permanent so that published URLs keep their owner.

    ``PATCH /v1/program-affiliates/:id/links/:linkId``. Errors: ``validation_error`` (``name``),
    ``program_affiliate_not_found``, ``link_not_found``."""
    link_name = optional_line(name, param="name")

    def work(tx: Tx) -> Link:
        link = evolve(_require_link(tx, principal, affiliate_id, link_id), name=link_name)
        tx.uow.links.replace(link)
        return link

    return rt.transaction(work)


def delete_link(rt: Runtime, principal: Principal, affiliate_id: str, link_id: str) -> Link:
    """Delete a link (``DELETE /v1/program-affiliates/:id/links/:linkId``): it stops attributing, and its
    row and code stay, so that a published URL never changes owner.

    Errors: ``program_affiliate_not_found``, ``link_not_found`` (also an already deleted one)."""

    def work(tx: Tx) -> Link:
        link = evolve(_require_link(tx, principal, affiliate_id, link_id), deleted_at=tx.now)
        tx.uow.links.replace(link)
        return link

    return rt.transaction(work)
