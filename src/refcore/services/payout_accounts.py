"""An affiliate's side of payouts: where to be paid (payout details) and the payout balance.

Only the affiliate (``key_aff_…``) saves its details; a Developer reads them (and the balance)
by naming the program affiliate, and sees them in the CSV export and payout instructions.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from refcore.credentials import shown
from refcore.errors import NotFound, ValidationError
from refcore.models.payout import PayoutDetails, PayoutMethod
from refcore.rules.entry_status import Balance
from refcore.rules.payouts import REQUIRED_DETAILS, normalise_iban
from refcore.services.access import own_affiliate
from refcore.services.balances import live_balance
from refcore.services.payout_access import readable_affiliate
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import optional_line, optional_text, require_choice, require_email, require_text

DETAIL_FIELDS = frozenset({"method", "email", "account_holder", "iban", "notes"})


@frozen
class DetailsInput:
    method: PayoutMethod
    email: str | None
    account_holder: str | None
    iban: str | None
    notes: str | None


def parse_details(values: Mapping[str, object]) -> DetailsInput:
    """Validate a payout details body: known fields only, the method's required fields present.

    Errors: ``validation_error`` (an unknown field, ``method``, a field the method requires, ``email``,
    ``iban``, ``account_holder``, ``notes``)."""
    unknown = sorted(set(values) - DETAIL_FIELDS)
    if unknown:
        named = shown(unknown[0])
        raise ValidationError(f"Unknown field {named}", param=named)
    method = require_choice(values.get("method"), PayoutMethod, param="method")
    for name in REQUIRED_DETAILS[method]:
        if values.get(name) is None:
            raise ValidationError(f"{name} is required for method {method.value}", param=name)
    email = values.get("email")
    iban = optional_text(values.get("iban"), param="iban", max_length=64)
    return DetailsInput(
        method=method,
        email=None if email is None else require_email(email).strip(),
        account_holder=optional_line(values.get("account_holder"), param="account_holder"),
        iban=None if iban is None else normalise_iban(iban),
        notes=optional_text(values.get("notes"), param="notes", max_length=1000),
    )


def save_payout_details(
    rt: Runtime, principal: Principal, program_id: object, values: Mapping[str, object]
) -> PayoutDetails:
    """``PUT /v1/payout-details?program_id=``: replaces the whole record (``PUT`` semantics).

    Errors: ``validation_error`` (``program_id``; see :func:`parse_details`), ``forbidden`` (not an
    affiliate key), ``program_not_found``."""
    program_ref = require_text(program_id, param="program_id")
    parsed = parse_details(values)

    def work(tx: Tx) -> PayoutDetails:
        affiliate = own_affiliate(tx, principal, program_ref, for_update=True)
        existing = tx.uow.payout_details.find_one({"program_affiliate_id": affiliate.id}, for_update=True)
        details = PayoutDetails(
            id=existing.id if existing else tx.new_id("pdt"),
            app_id=affiliate.app_id,
            program_id=affiliate.program_id,
            program_affiliate_id=affiliate.id,
            method=parsed.method,
            created_at=existing.created_at if existing else tx.now,
            updated_at=tx.now,
            email=parsed.email,
            account_holder=parsed.account_holder,
            iban=parsed.iban,
            notes=parsed.notes,
        )
        if existing is None:
            tx.uow.payout_details.add(details)
        else:
            tx.uow.payout_details.replace(details)
        return details

    return rt.transaction(work)


def get_payout_details(
    rt: Runtime, principal: Principal, program_id: object, program_affiliate_id: str | None = None
) -> PayoutDetails:
    """``GET /v1/payout-details?program_id=``; ``404 payout_details_not_found`` until saved.

    Errors: ``validation_error`` (``program_id``; a Developer naming no ``program_affiliate_id``),
    ``program_not_found``, ``program_affiliate_not_found``, ``live_key_required``,
    ``payout_details_not_found``."""
    program_ref = require_text(program_id, param="program_id")

    def work(tx: Tx) -> PayoutDetails:
        affiliate = readable_affiliate(tx, principal, program_ref, program_affiliate_id)
        details = tx.uow.payout_details.find_one({"program_affiliate_id": affiliate.id})
        if details is None:
            raise NotFound.of("payout_details")
        return details

    return rt.read(work)


@frozen
class BalanceView:
    program_id: str
    program_affiliate_id: str
    currency: str
    balance: Balance


def get_payout_balance(
    rt: Runtime, principal: Principal, program_id: object, program_affiliate_id: str | None = None
) -> BalanceView:
    """``GET /v1/payout-balance?program_id=``: pending, held, available, processing, paid (Live).

    Errors: ``validation_error`` (``program_id``; a Developer naming no ``program_affiliate_id``),
    ``program_not_found``, ``program_affiliate_not_found``, ``live_key_required``."""
    program_ref = require_text(program_id, param="program_id")

    def work(tx: Tx) -> BalanceView:
        affiliate = readable_affiliate(tx, principal, program_ref, program_affiliate_id)
        program = tx.uow.programs.get(affiliate.program_id)
        assert program is not None
        return BalanceView(program.id, affiliate.id, program.currency, live_balance(tx, affiliate.id))

    return rt.read(work)
