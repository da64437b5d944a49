"""Who may touch payouts (decisions 1 and 11), in one place.

- Developer side (ready payouts, batches, mark-paid, requests): a session of the App's
  organization, or a Live App key of the App. Payouts are Live only, so a Test key is
  ``403 live_key_required``; an affiliate key is ``403 forbidden``.
- Affiliate side (details, balance, requests): an affiliate key acts for its own program
  affiliate only; a ``program_id`` it does not belong to is ``404`` like any foreign ID.
- Payout executions (instructions, reports): a Live App key of the exact App; a Test key or
  a session of that App is ``403 live_key_required``; anyone else gets ``404``.
"""

from __future__ import annotations

from refcore.errors import Forbidden, LiveKeyRequired, NotFound, ValidationError
from refcore.models import Mode, Program, ProgramAffiliate
from refcore.models.payout import PayoutExecution
from refcore.services.access import (
    is_affiliate,
    may_access_app,
    own_affiliate,
    require_program,
    require_program_affiliate,
)
from refcore.services.principal import Principal
from refcore.services.runtime import Tx


def require_operator_kind(principal: Principal) -> None:
    """Developer-side payout calls take a session or an App key (never an affiliate key).

    Errors: ``forbidden``."""
    if not (principal.is_session or principal.is_app_key):
        raise Forbidden("Payout management needs a dashboard session or a Live App key")


def require_live(principal: Principal) -> None:
    """Payouts are Live only: a Test App key is refused, after tenancy was checked.

    Errors: ``live_key_required``."""
    if principal.is_app_key and principal.mode is not Mode.LIVE:
        raise LiveKeyRequired("Payouts are Live only; use a Live App key (key_app_…)")


def operator_program(
    tx: Tx,
    principal: Principal,
    program_id: str,
    *,
    as_resource: tuple[str, str] | None = None,
    live: bool = True,
) -> Program:
    """The program of a Developer-side payout call. Checked in this order, so that another
    tenant's object is ``404`` whatever the key's mode: the kind of credential (``403
    forbidden``), tenancy (``404``, named after ``as_resource`` when the program was reached
    through another object), then Live (``403 live_key_required``). With ``live=False`` the
    caller checks Live itself, after the tenancy of the other objects it names (an affiliate
    filter), so that those too are ``404`` for a Test key (probe G)."""
    require_operator_kind(principal)
    try:
        program = require_program(tx, principal, program_id)
    except NotFound:
        if as_resource is None:
            raise
        raise NotFound.of(*as_resource) from None
    if live:
        require_live(principal)
    return program


def readable_affiliate(
    tx: Tx, principal: Principal, program_id: str, program_affiliate_id: str | None
) -> ProgramAffiliate:
    """Balance and details reads: the affiliate itself, or a Developer naming the affiliate.

    Errors: ``program_not_found``, ``program_affiliate_not_found``, ``live_key_required``,
    ``validation_error`` (a Developer naming no ``program_affiliate_id``)."""
    if is_affiliate(principal):
        affiliate = own_affiliate(tx, principal, program_id)
        if program_affiliate_id is not None and program_affiliate_id != affiliate.id:
            raise NotFound.of("program_affiliate", program_affiliate_id)
        return affiliate
    program = operator_program(tx, principal, program_id, live=False)
    if program_affiliate_id is None:
        require_live(principal)
        raise ValidationError("program_affiliate_id is required", param="program_affiliate_id")
    affiliate = require_program_affiliate(tx, principal, program_affiliate_id)
    if affiliate.program_id != program.id:
        raise NotFound.of("program_affiliate", program_affiliate_id)
    require_live(principal)
    return affiliate


def execution_for_live_key(
    tx: Tx, principal: Principal, execution_id: str, *, for_update: bool = False
) -> PayoutExecution:
    """The payout execution, if the caller is a Live App key of its App: the App's payout system acts on it
    (interface 6.5). A Test key of that App, or a session of its organization, is told which credential
    to use; anyone else gets ``404`` as if it did not exist. ``for_update`` locks the row, so that two
    reports apply one after the other.

    Errors: ``payout_execution_not_found``, ``live_key_required``."""
    execution = tx.uow.payout_executions.get(execution_id, for_update=for_update)
    if execution is None:
        raise NotFound.of("payout_execution", execution_id)
    if principal.is_app_key and principal.app_id == execution.app_id:
        if principal.mode is Mode.LIVE:
            return execution
        raise LiveKeyRequired("Payout executions need a Live App key of this App")
    if principal.is_session:
        app = tx.uow.apps.get(execution.app_id)
        if app is not None and may_access_app(tx, principal, app):
            raise LiveKeyRequired("Payout executions need a Live App key of this App, not a session")
    raise NotFound.of("payout_execution", execution_id)
