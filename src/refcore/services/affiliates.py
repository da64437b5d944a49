"""Program affiliates and their links (decisions 2)."""

from __future__ import annotations

from attrs import evolve

from refcore.errors import NotFound, StateConflict, ValidationError
from refcore.models import AffiliateStatus, EventType, Link, ProgramAffiliate
from refcore.representation import represent
from refcore.services.access import require_program, require_program_affiliate
from refcore.services.pagination import Page, paginate
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import optional_text, require_choice, require_email, require_link_code, require_text


def emit_affiliate_event(tx: Tx, type: EventType, affiliate: ProgramAffiliate) -> None:
    """``affiliate.*`` events are always ``livemode: true`` (configuration is shared by modes)."""
    tx.emit(type, app_id=affiliate.app_id, livemode=True, data=represent(affiliate))


def create_affiliate(
    tx: Tx, *, program_id: str, app_id: str, email: str, name: str, status: AffiliateStatus
) -> ProgramAffiliate:
    """Add an affiliate inside a unit of work; shared by the Developer route and hosted signup."""
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
    """Added by the Developer, an affiliate starts ``active``."""
    program_ref = require_text(program_id, param="program_id")
    address = require_email(email).strip().lower()
    display = require_text(name, param="name")

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
    """Back to the status the affiliate had before it was disabled."""

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
    """Create a link inside a unit of work; codes are unique installation-wide, case-insensitively."""
    if code is None:
        code = tx.new_id("x")[-10:]
    elif tx.uow.links.find_one({"code": code}) is not None:
        raise ValidationError(f"code {code} is taken", param="code")
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
    link_code = None if code is None else require_link_code(code)
    link_name = optional_text(name, param="name")

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
    """Only the name changes; a code is permanent so that published URLs keep their owner."""
    link_name = optional_text(name, param="name")

    def work(tx: Tx) -> Link:
        link = evolve(_require_link(tx, principal, affiliate_id, link_id), name=link_name)
        tx.uow.links.replace(link)
        return link

    return rt.transaction(work)


def delete_link(rt: Runtime, principal: Principal, affiliate_id: str, link_id: str) -> Link:
    def work(tx: Tx) -> Link:
        link = evolve(_require_link(tx, principal, affiliate_id, link_id), deleted_at=tx.now)
        tx.uow.links.replace(link)
        return link

    return rt.transaction(work)
