"""Payout requests: an affiliate asking for its available balance (decisions 5).

A request freezes nothing and moves nothing: the Developer answers it by paying (a batch or
mark-paid; the affiliate's next succeeded payout closes it as ``paid``) or by ``decline``. One
request may be open per affiliate at a time (a unique key on ``open_program_affiliate_id``).

| Status | Trigger | Next |
|---|---|---|
| (none) | affiliate ``POST /v1/payout-requests`` with available > 0 | ``open`` |
| ``open`` | Developer ``POST /v1/payout-requests/:id/decline`` | ``declined`` |
| ``open`` | a payout to the affiliate succeeds (report or mark-paid) | ``paid`` |
"""

from __future__ import annotations

from attrs import evolve

from refcore.errors import NotFound, StateConflict, ValidationError
from refcore.models.payout import PayoutRequest, PayoutRequestStatus
from refcore.rules.payouts import is_ready
from refcore.services.access import is_affiliate, own_affiliate, require_program_affiliate
from refcore.services.balances import live_balance
from refcore.services.pagination import Page, paginate
from refcore.services.payout_access import operator_program, require_live, require_operator_kind
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import require_choice, require_text


def create_payout_request(rt: Runtime, principal: Principal, program_id: object) -> PayoutRequest:
    """For the current available balance; nothing available, or a request already open: 409.

    ``POST /v1/payout-requests``, affiliate keys only. Errors: ``validation_error`` (``program_id``),
    ``forbidden`` (not an affiliate key), ``program_not_found``, ``state_conflict`` (a request already
    open, nothing available, or less than the program's minimum payout)."""
    program_ref = require_text(program_id, param="program_id")

    def work(tx: Tx) -> PayoutRequest:
        affiliate = own_affiliate(tx, principal, program_ref, for_update=True)
        program = tx.uow.programs.get(affiliate.program_id)
        assert program is not None
        open_request = tx.uow.payout_requests.find_one({"open_program_affiliate_id": affiliate.id})
        if open_request is not None:
            raise StateConflict(f"Payout request {open_request.id} is already open")
        available = live_balance(tx, affiliate.id).available
        if available <= 0:
            raise StateConflict("Nothing is available to pay out yet")
        if not is_ready(available, program.minimum_payout):
            # No payout could pay it (a batch and mark-paid need the minimum too): it would
            # only sit open until the Developer declined it.
            raise StateConflict(
                f"The available balance, {available}, is below the program's minimum payout, "
                f"{program.minimum_payout}"
            )
        request = PayoutRequest(
            id=tx.new_id("preq"),
            app_id=affiliate.app_id,
            program_id=program.id,
            program_affiliate_id=affiliate.id,
            amount=available,
            currency=program.currency,
            status=PayoutRequestStatus.OPEN,
            created_at=tx.now,
            open_program_affiliate_id=affiliate.id,
        )
        tx.uow.payout_requests.add(request)
        return request

    return rt.transaction(work)


def list_payout_requests(
    rt: Runtime,
    principal: Principal,
    *,
    program_id: str | None = None,
    program_affiliate_id: str | None = None,
    status: str | None = None,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[PayoutRequest]:
    """Affiliates list their own; sessions name the program; Live App keys list their App's.

    ``GET /v1/payout-requests``. Errors: ``validation_error`` (``status``, ``limit``; a session naming
    no program), ``program_not_found``, ``program_affiliate_not_found``, ``live_key_required``,
    ``invalid_starting_after``."""
    where: dict[str, object] = {}
    if status is not None:
        where["status"] = require_choice(status, PayoutRequestStatus, param="status")

    def work(tx: Tx) -> Page[PayoutRequest]:
        if is_affiliate(principal):
            assert principal.program_affiliate_id is not None
            if program_id is not None:
                own_affiliate(tx, principal, program_id)
            if program_affiliate_id not in (None, principal.program_affiliate_id):
                raise NotFound.of("program_affiliate", program_affiliate_id)
            where["program_affiliate_id"] = principal.program_affiliate_id
        else:
            require_operator_kind(principal)
            if program_id is not None:
                where["program_id"] = operator_program(tx, principal, program_id, live=False).id
            elif principal.is_app_key and principal.app_id is not None:
                where["app_id"] = principal.app_id
            else:
                raise ValidationError("program_id is required", param="program_id")
            if program_affiliate_id is not None:
                # Another tenant's affiliate, or none, is 404 like any filter naming what the
                # caller may not see; it had answered an empty list (and, to a Test key,
                # 403 live_key_required before its tenancy was checked: probe G).
                where["program_affiliate_id"] = require_program_affiliate(
                    tx, principal, program_affiliate_id
                ).id
            require_live(principal)
        return paginate(
            tx.uow.payout_requests, where, prefix="preq", limit=limit, starting_after=starting_after
        )

    return rt.read(work)


def _request(tx: Tx, principal: Principal, request_id: str, *, for_update: bool = False) -> PayoutRequest:
    request = tx.uow.payout_requests.get(request_id, for_update=for_update)
    if request is None:
        raise NotFound.of("payout_request", request_id)
    if is_affiliate(principal):
        if request.program_affiliate_id != principal.program_affiliate_id:
            raise NotFound.of("payout_request", request_id)
        return request
    operator_program(tx, principal, request.program_id, as_resource=("payout_request", request_id))
    return request


def get_payout_request(rt: Runtime, principal: Principal, request_id: str) -> PayoutRequest:
    """A payout request by ID (``GET /v1/payout-requests/:id``): an affiliate key reads its own, a session
    or Live App key those of its App's programs.

    Errors: ``payout_request_not_found``, ``live_key_required`` (a Test App key)."""
    return rt.read(lambda tx: _request(tx, principal, request_id))


def decline_payout_request(rt: Runtime, principal: Principal, request_id: str) -> PayoutRequest:
    """Developer only: ``open`` → ``declined``; anything else is ``409 state_conflict``.

    A declined request names no payout: ``payout_execution_id`` says which payout pays the
    request, and none does once it is declined, even when a batch prepared before had frozen its
    money (that payout goes on; cancel its batch to stop it). It had kept the link, and then
    named a payout that failed or was canceled after the decline (found by a probe).

    ``POST /v1/payout-requests/:id/decline``. Errors: ``forbidden`` (an affiliate key),
    ``payout_request_not_found``, ``live_key_required``, ``state_conflict``."""
    require_operator_kind(principal)

    def work(tx: Tx) -> PayoutRequest:
        request = _request(tx, principal, request_id, for_update=True)
        if request.status is not PayoutRequestStatus.OPEN:
            raise StateConflict(f"Payout request {request.id} is already {request.status.value}")
        request = evolve(
            request,
            status=PayoutRequestStatus.DECLINED,
            decided_at=tx.now,
            open_program_affiliate_id=None,
            payout_execution_id=None,
        )
        tx.uow.payout_requests.replace(request)
        return request

    return rt.transaction(work)
