"""Authorization rules of decisions 1, in one place.

Anything the caller may not see is reported exactly as if it did not exist (``404``), so IDs
of other tenants leak nothing. An activity ID of the other mode is ``409 mode_mismatch``.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from refcore.errors import Forbidden, ModeMismatch, NotFound
from refcore.models import App, Mode, Program, ProgramAffiliate
from refcore.ports import Repository
from refcore.services.principal import Principal, PrincipalKind, Scope
from refcore.services.runtime import Tx
from refcore.validation import require_choice


class _Activity(Protocol):
    @property
    def app_id(self) -> str: ...

    @property
    def mode(self) -> Mode: ...


A = TypeVar("A", bound=_Activity)


def user_in_organization(tx: Tx, user_id: str, organization_id: str) -> bool:
    """Whether the user is a member of the organization: membership is what gives a session its
    organizations' Apps (decisions 1)."""
    membership = tx.uow.memberships.find_one({"organization_id": organization_id, "user_id": user_id})
    return membership is not None


def require_organization(tx: Tx, principal: Principal, organization_id: str) -> None:
    """Check that the caller is a session of a member of the organization. A key, a missing organization
    and another tenant's are all the same ``404``, so an ID tells nothing about other tenants.

    Errors: ``organization_not_found``."""
    if not (
        principal.is_session
        and principal.user_id is not None
        and tx.uow.organizations.get(organization_id) is not None
        and user_in_organization(tx, principal.user_id, organization_id)
    ):
        raise NotFound.of("organization", organization_id)


def require_app(tx: Tx, principal: Principal, app_id: str, *, for_update: bool = False) -> App:
    """The App, if the caller may configure it: its keys, or a session of its organization.

    Errors: ``app_not_found`` (also for a key of another App, and for an affiliate key)."""
    app = tx.uow.apps.get(app_id, for_update=for_update)
    if app is None or not may_access_app(tx, principal, app):
        raise NotFound.of("app", app_id)
    return app


def may_access_app(tx: Tx, principal: Principal, app: App) -> bool:
    """Whether the caller may configure ``app``: a session of its organization, or an App (or managed
    revenue) key of that App. An affiliate key never may."""
    if principal.is_session:
        return principal.user_id is not None and user_in_organization(
            tx, principal.user_id, app.organization_id
        )
    return principal.is_app_key and principal.app_id == app.id


def require_program(tx: Tx, principal: Principal, program_id: str, *, for_update: bool = False) -> Program:
    """The program, if the caller may configure its App (:func:`may_access_app`); otherwise ``404`` as if
    it did not exist. ``for_update`` locks its row, for a caller that replaces it.

    Errors: ``program_not_found``."""
    program = tx.uow.programs.get(program_id, for_update=for_update)
    if program is None or not may_see_app(tx, principal, program.app_id):
        raise NotFound.of("program", program_id)
    return program


def require_program_affiliate(
    tx: Tx, principal: Principal, program_affiliate_id: str, *, for_update: bool = False
) -> ProgramAffiliate:
    """The program affiliate, if the caller may configure its App; ``for_update`` locks its row, so that
    two concurrent status changes apply one after the other.

    Errors: ``program_affiliate_not_found``."""
    affiliate = tx.uow.program_affiliates.get(program_affiliate_id, for_update=for_update)
    if affiliate is None or not may_see_app(tx, principal, affiliate.app_id):
        raise NotFound.of("program_affiliate", program_affiliate_id)
    return affiliate


def may_see_app(tx: Tx, principal: Principal, app_id: str) -> bool:
    """Whether the App exists and the caller may see it (:func:`may_access_app`): the check of
    every record read through the App it belongs to (a program, an affiliate, an event)."""
    app = tx.uow.apps.get(app_id)
    return app is not None and may_access_app(tx, principal, app)


def mode_to_read(principal: Principal, environment: object) -> Mode:
    """The mode whose records a read shows: sessions hold no mode and choose it with
    ``environment`` (default ``live``, decisions 11); App keys read their own and may only
    confirm it.

    Errors: ``validation_error`` (``environment``), ``mode_mismatch`` (a key naming the other mode)."""
    asked = None if environment is None else require_choice(environment, Mode, param="environment")
    if principal.is_app_key and principal.mode is not None:
        if asked is not None and asked is not principal.mode:
            raise ModeMismatch(
                f"environment {asked.value} does not match the {principal.mode.value} mode of the key",
                param="environment",
            )
        return principal.mode
    return asked or Mode.LIVE


def activity_scope(principal: Principal) -> Scope:
    """The App and mode an App key writes activity into; sessions and affiliates write none.

    Errors: ``forbidden`` (a session or an affiliate key)."""
    if not principal.is_app_key or principal.app_id is None or principal.mode is None:
        raise Forbidden("Tracking and revenue calls need an App API key (key_app_… or key_test_app_…)")
    return Scope(app_id=principal.app_id, mode=principal.mode)


def require_activity(repo: Repository[A], resource: str, object_id: str, scope: Scope) -> A:
    """An activity record of the scope's App: 404 for another App, 409 for the other mode."""
    return check_activity(repo.get(object_id), resource, object_id, scope)


def check_activity(record: A | None, resource: str, object_id: str, scope: Scope) -> A:
    """:func:`require_activity` for a record already read (``None`` when none was found)."""
    if record is None or record.app_id != scope.app_id:
        raise NotFound.of(resource, object_id)
    if record.mode is not scope.mode:
        raise ModeMismatch(
            f"{object_id} belongs to {record.mode.value} mode but this request is in {scope.mode.value} mode",
            param=f"{resource}_id",
        )
    return record


def is_affiliate(principal: Principal) -> bool:
    """Whether the caller is an affiliate key, which acts for exactly one program affiliate."""
    return principal.kind is PrincipalKind.AFFILIATE_KEY and principal.program_affiliate_id is not None


def own_affiliate(
    tx: Tx, principal: Principal, program_id: str, *, for_update: bool = False
) -> ProgramAffiliate:
    """The affiliate an affiliate key acts for, which must belong to ``program_id``.

    Errors: ``forbidden`` (not an affiliate key), ``program_not_found``."""
    if not is_affiliate(principal):
        raise Forbidden("This operation needs an affiliate key (key_aff_…)")
    assert principal.program_affiliate_id is not None
    affiliate = tx.uow.program_affiliates.get(principal.program_affiliate_id, for_update=for_update)
    if affiliate is None or affiliate.program_id != program_id:
        raise NotFound.of("program", program_id)
    return affiliate
