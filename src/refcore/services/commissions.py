"""Reading the ledger: commission entry lists and payout balances (decisions 4, 5, 10)."""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

from refcore.errors import NotFound, ValidationError
from refcore.models import CommissionEntry
from refcore.representation import JsonObject, represent_entry
from refcore.rules.entry_status import Balance, entry_status
from refcore.services.access import require_program_affiliate
from refcore.services.balances import live_balance
from refcore.services.pagination import Page, paginate
from refcore.services.payout_access import require_live
from refcore.services.payout_state import PayoutStates
from refcore.services.principal import Principal, PrincipalKind, Scope
from refcore.services.runtime import Runtime, Tx
from refcore.validation import require_text

_FILTERS = ("program_id", "program_affiliate_id", "transaction_id")


@frozen
class EntryPage:
    data: list[JsonObject]
    has_more: bool


def _held_payments(tx: Tx, entries: Iterable[CommissionEntry]) -> frozenset[str]:
    """The entries' payments with an open dispute (their entries are ``held``), in one read."""
    return tx.uow.ledger().held_payments({e.transaction_id for e in entries})


def _paid_entry_ids(tx: Tx, entries: Iterable[CommissionEntry]) -> PayoutStates:
    """Entries inside a completed payout (``paid``) or frozen in a live one (``processing``),
    looked up by entry: a page costs the same however many payouts its affiliates had."""
    found = tx.uow.ledger().payout_states([entry.id for entry in entries])
    return PayoutStates(paid=found.paid, processing=found.processing)


def list_commissions(
    rt: Runtime,
    scope: Scope,
    filters: dict[str, str],
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> EntryPage:
    """One page of the commission entries of ``scope``, newest first, each with its status.

    The ledger read under :func:`refcore.services.activity.list_commission_entries` (``GET
    /v1/commissions``), which checks the caller's scope and that each filter names something in
    it; here ``scope`` is taken as given. A filter is one of ``program_id``,
    ``program_affiliate_id`` and ``transaction_id``, with an ID as its value; any other name or
    value is ``ValidationError``. An unknown name had been dropped without a word, so a
    misspelt ``affiliate_id`` listed every affiliate's entries.

    Errors: ``validation_error`` (a filter, ``limit``), ``invalid_starting_after``."""
    where: dict[str, object] = {"app_id": scope.app_id, "mode": scope.mode}
    for name, value in filters.items():
        if name not in _FILTERS:
            raise ValidationError(f"{name} is not a filter of this list", param=name)
        where[name] = require_text(value, param=name)

    def work(tx: Tx) -> EntryPage:
        page: Page[CommissionEntry] = paginate(
            tx.uow.commission_entries,
            where,
            prefix="com",
            limit=limit,
            starting_after=starting_after,
        )
        held = _held_payments(tx, page.data)
        payouts = _paid_entry_ids(tx, page.data)
        data = [
            represent_entry(
                e,
                entry_status(
                    e,
                    now=tx.now,
                    payment_held=e.transaction_id in held,
                    paid=e.id in payouts.paid,
                    processing=e.id in payouts.processing,
                ),
            )
            for e in page.data
        ]
        return EntryPage(data=data, has_more=page.has_more)

    return rt.read(work)


def balance_of(tx: Tx, program_affiliate_id: str) -> Balance:
    """Sums of the affiliate's Live entries by derived status, in one read (see balances)."""
    return live_balance(tx, program_affiliate_id)


def payout_balance(rt: Runtime, principal: Principal, program_affiliate_id: str) -> Balance:
    """Live only. Affiliates see their own; Developers see any affiliate of their Apps, with a
    session or a Live App key, as ``GET /v1/payout-balance`` allows
    (:func:`refcore.services.payout_accounts.get_payout_balance`): a Test App key had read the
    Live balance here.

    Errors: ``program_affiliate_not_found`` (also another affiliate's, for an affiliate key),
    ``live_key_required``."""

    def work(tx: Tx) -> Balance:
        if principal.kind is PrincipalKind.AFFILIATE_KEY:
            if principal.program_affiliate_id != program_affiliate_id:
                raise NotFound.of("program_affiliate", program_affiliate_id)
        else:
            require_program_affiliate(tx, principal, program_affiliate_id)
            require_live(principal)
        return balance_of(tx, program_affiliate_id)

    return rt.read(work)
