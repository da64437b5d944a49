"""Reading activity: clicks, customers, referrals, payments, refunds, disputes (decisions 1, 9, 11).

Activity belongs to one App and one mode. Who reads it decides where it is looked for:

- an App key (or managed revenue key) reads its own App in its own mode. An ID of another App is
  ``404`` as if it did not exist; an ID of the other mode is ``409 mode_mismatch``;
- a dashboard session names the scope itself: ``app_id`` (or ``program_id`` where the resource has
  one) and ``environment`` (``test`` or ``live``, default ``live``). By ID, a session sees the record
  of either mode in any App of its organizations: it holds no mode to mismatch.

Filters are equality filters on model fields. A filter that names another resource by ID is
checked like any other ID the caller sends (``404`` for another tenant, ``409`` for the other
mode), so a filter can never be used to probe other tenants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from refcore.errors import Forbidden, ModeMismatch, NotFound, ValidationError
from refcore.identifiers import prefix_of
from refcore.models import (
    Click,
    CommissionEntry,
    Customer,
    Dispute,
    DisputeStatus,
    Mode,
    Payment,
    Referral,
    Refund,
)
from refcore.ports import Repository, UnitOfWork
from refcore.representation import JsonObject
from refcore.services.access import (
    check_activity,
    may_access_app,
    require_activity,
    require_app,
    require_program,
)
from refcore.services.commissions import EntryPage, list_commissions
from refcore.services.pagination import MAX_LIMIT, Page, paginate
from refcore.services.principal import Principal, Scope
from refcore.services.runtime import Runtime, Tx
from refcore.validation import address_key, require_choice, require_text


@frozen
class ActivityKind:
    """One kind of activity record: where it is stored and how callers may filter it."""

    #: The resource word of ``<resource>_not_found`` and of ``param`` names (``click`` -> ``click_id``).
    resource: str
    #: The ID prefix; a cursor or ID with another prefix is not of this kind.
    prefix: str
    repository: Callable[[UnitOfWork], Repository[Any]]
    #: Model fields a caller may filter on.
    filters: frozenset[str]

    @property
    def program_scoped(self) -> bool:
        """Whether ``program_id`` may name the scope of a session's list."""
        return "program_id" in self.filters


CLICKS = ActivityKind(
    "click", "clk", lambda uow: uow.clicks, frozenset({"program_id", "program_affiliate_id", "link_id"})
)
CUSTOMERS = ActivityKind(
    "customer", "rcus", lambda uow: uow.customers, frozenset({"external_customer_id", "email"})
)
REFERRALS = ActivityKind(
    "referral",
    "ref",
    lambda uow: uow.referrals,
    frozenset({"program_id", "program_affiliate_id", "customer_id", "click_id"}),
)
PAYMENTS = ActivityKind(
    "transaction",
    "txn",
    lambda uow: uow.payments,
    frozenset({"program_id", "program_affiliate_id", "customer_id", "payment_id"}),
)
REFUNDS = ActivityKind("refund", "txn", lambda uow: uow.refunds, frozenset({"transaction_id", "payment_id"}))
DISPUTES = ActivityKind(
    "dispute", "dsp", lambda uow: uow.disputes, frozenset({"transaction_id", "payment_id", "status"})
)
COMMISSIONS = ActivityKind(
    "commission",
    "com",
    lambda uow: uow.commission_entries,
    frozenset({"program_id", "program_affiliate_id", "transaction_id"}),
)


@frozen
class ActivityQuery:
    """What a caller asks of an activity list, as the caller sent it (strings, unvalidated)."""

    app_id: str | None = None
    environment: str | None = None
    filters: Mapping[str, str] = {}
    limit: object = None
    starting_after: str | None = None


# -- scope -----------------------------------------------------------------------------------


def resolve_scope(
    tx: Tx, principal: Principal, *, app_id: str | None, environment: str | None, program_id: str | None
) -> Scope:
    """The App and mode a list reads.

    App keys: their own; naming another App is ``404``, another environment ``409 mode_mismatch``.
    Sessions: ``app_id`` or ``program_id`` is required; ``environment`` defaults to ``live``.
    """
    mode = None if environment is None else require_choice(environment, Mode, param="environment")
    if principal.is_app_key and principal.app_id is not None and principal.mode is not None:
        if mode is not None and mode is not principal.mode:
            raise ModeMismatch(
                f"environment {mode.value} does not match the {principal.mode.value} mode of the key",
                param="environment",
            )
        if app_id is not None and app_id != principal.app_id:
            raise NotFound.of("app", app_id)
        return Scope(app_id=principal.app_id, mode=principal.mode)
    if not principal.is_session:
        raise Forbidden("Activity is read with an App key or a dashboard session")
    if app_id is not None:
        scope_app = require_app(tx, principal, app_id).id
    elif program_id is not None:
        scope_app = require_program(tx, principal, program_id).app_id
    else:
        raise ValidationError("app_id (or program_id) is required with a session", param="app_id")
    return Scope(app_id=scope_app, mode=mode or Mode.LIVE)


def _filter_value(tx: Tx, scope: Scope, name: str, value: str) -> object:
    """The value to match for one filter, after checking that an ID names something in scope."""
    if name == "program_id":
        program = tx.uow.programs.get(value)
        if program is None or program.app_id != scope.app_id:
            raise NotFound.of("program", value)
        return value
    if name == "program_affiliate_id":
        affiliate = tx.uow.program_affiliates.get(value)
        if affiliate is None or affiliate.app_id != scope.app_id:
            raise NotFound.of("program_affiliate", value)
        return value
    if name == "link_id":
        link = tx.uow.links.get(value)
        if link is None or link.app_id != scope.app_id:
            raise NotFound.of("link", value)
        return value
    if name == "customer_id":
        return require_activity(tx.uow.customers, "customer", value, scope).id
    if name == "click_id":
        return require_activity(tx.uow.clicks, "click", value, scope).id
    if name == "transaction_id":
        return _payment_filter(tx, scope, value)
    if name == "status":
        return require_choice(value, DisputeStatus, param="status")
    if name == "email":
        return address_key(value)  # as identify keeps it
    return value


def _payment_filter(tx: Tx, scope: Scope, value: str) -> str:
    """The payment a ``transaction_id`` filter names. Commissions, refunds and disputes are filed
    under their payment's ``txn_``; a refund's, which ``GET /v1/transactions/:id`` finds, had
    answered ``404 transaction_not_found`` (probe H). It is ``validation_error`` naming the
    payment to filter by, after the usual answers for another App (404) and mode (409)."""
    try:
        return require_activity(tx.uow.payments, "transaction", value, scope).id
    except NotFound:
        refund = tx.uow.refunds.get(value)
        if refund is None:
            raise
        check_activity(refund, "transaction", value, scope)
        raise ValidationError(
            f"transaction_id {value} is a refund; filter by its payment's, {refund.transaction_id}",
            param="transaction_id",
        ) from None


def _where(tx: Tx, principal: Principal, kind: ActivityKind, query: ActivityQuery) -> dict[str, object]:
    if not isinstance(query.filters, Mapping):
        raise ValidationError("filters must map filter names to values", param="filters")
    filters: dict[str, str] = {}
    for name, value in query.filters.items():
        if not isinstance(name, str) or name not in kind.filters:
            raise ValidationError(f"{name} is not a filter of this list", param=str(name))
        # A filter's value is text, as the query string's are: a library caller's 2**63 had
        # been a raw OverflowError from SQLite's driver, a dict an internal error (probe AD).
        # The checked text is what is matched, never the caller's own object.
        filters[name] = require_text(value, param=name)
    program_id = filters.get("program_id") if kind.program_scoped else None
    scope = resolve_scope(
        tx, principal, app_id=query.app_id, environment=query.environment, program_id=program_id
    )
    where: dict[str, object] = {"app_id": scope.app_id, "mode": scope.mode}
    for name, value in sorted(filters.items()):
        where[name] = _filter_value(tx, scope, name, value)
    return where


def scope_of_query(rt: Runtime, principal: Principal, kind: ActivityKind, query: ActivityQuery) -> Scope:
    """The checked scope of a list query (for lists another service pages, like commissions).

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""

    def work(tx: Tx) -> Scope:
        where = _where(tx, principal, kind, query)
        app_id, mode = where["app_id"], where["mode"]
        assert isinstance(app_id, str) and isinstance(mode, Mode)
        return Scope(app_id=app_id, mode=mode)

    return rt.read(work)


# -- lists -----------------------------------------------------------------------------------


def list_activity(rt: Runtime, principal: Principal, kind: ActivityKind, query: ActivityQuery) -> Page[Any]:
    """One page, newest first; the cursor must come from this very list (decisions 9).

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""

    def work(tx: Tx) -> Page[Any]:
        return paginate(
            kind.repository(tx.uow),
            _where(tx, principal, kind, query),
            prefix=kind.prefix,
            limit=query.limit,
            starting_after=query.starting_after,
        )

    return rt.read(work)


def list_clicks(rt: Runtime, principal: Principal, query: ActivityQuery) -> Page[Click]:
    """One page of the scope's clicks, newest first (``GET /v1/clicks``), filtered by ``program_id``,
    ``program_affiliate_id`` and ``link_id``. Who reads which App and mode: :func:`resolve_scope`.

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""
    return list_activity(rt, principal, CLICKS, query)


def list_customers(rt: Runtime, principal: Principal, query: ActivityQuery) -> Page[Customer]:
    """One page of the scope's customers, newest first (``GET /v1/customers``), filtered by
    ``external_customer_id`` and ``email`` (any case: identify keeps addresses lower-case). Who reads
    which App and mode: :func:`resolve_scope`.

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""
    return list_activity(rt, principal, CUSTOMERS, query)


def list_referrals(rt: Runtime, principal: Principal, query: ActivityQuery) -> Page[Referral]:
    """One page of the scope's referrals, newest first (``GET /v1/referrals``), filtered by ``program_id``,
    ``program_affiliate_id``, ``customer_id`` and ``click_id``. Who reads which App and mode:
    :func:`resolve_scope`.

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""
    return list_activity(rt, principal, REFERRALS, query)


def list_payments(rt: Runtime, principal: Principal, query: ActivityQuery) -> Page[Payment]:
    """One page of the scope's payments (refunds and disputes have lists of their own), newest first
    (``GET /v1/transactions``), filtered by ``program_id``, ``program_affiliate_id``, ``customer_id``
    and ``payment_id``. Who reads which App and mode: :func:`resolve_scope`.

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""
    return list_activity(rt, principal, PAYMENTS, query)


def list_refunds(rt: Runtime, principal: Principal, query: ActivityQuery) -> Page[Refund]:
    """One page of the scope's refunds, newest first (``GET /v1/transactions/refunds``), filtered by
    ``transaction_id`` and ``payment_id``. Who reads which App and mode: :func:`resolve_scope`.

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""
    return list_activity(rt, principal, REFUNDS, query)


def list_disputes(rt: Runtime, principal: Principal, query: ActivityQuery) -> Page[Dispute]:
    """One page of the scope's disputes, newest first (``GET /v1/transactions/disputes``), filtered by
    ``transaction_id``, ``payment_id`` and ``status``. Who reads which App and mode:
    :func:`resolve_scope`.

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""
    return list_activity(rt, principal, DISPUTES, query)


# -- by ID -----------------------------------------------------------------------------------


def find_visible(tx: Tx, principal: Principal, kind: ActivityKind, object_id: str) -> Any:
    """The record if the caller may read it: App keys per :func:`require_activity`, sessions in
    any App of their organizations; everything else ``404`` (``409`` for a key's other mode)."""
    record = kind.repository(tx.uow).get(object_id) if prefix_of(object_id) == kind.prefix else None
    if principal.is_app_key and principal.app_id is not None and principal.mode is not None:
        if record is None:
            raise NotFound.of(kind.resource, object_id)
        scope = Scope(app_id=principal.app_id, mode=principal.mode)
        return require_activity(kind.repository(tx.uow), kind.resource, object_id, scope)
    if principal.is_session:
        app = None if record is None else tx.uow.apps.get(record.app_id)
        if app is None or not may_access_app(tx, principal, app):
            raise NotFound.of(kind.resource, object_id)
        return record
    raise NotFound.of(kind.resource, object_id)


def get_activity(rt: Runtime, principal: Principal, kind: ActivityKind, object_id: str) -> Any:
    """One record of ``kind`` by ID, if the caller may read it (:func:`find_visible`), in a read unit of
    work of its own; the typed readers below are this for one kind each.

    Errors: ``<resource>_not_found`` of the kind, ``mode_mismatch``."""
    return rt.read(lambda tx: find_visible(tx, principal, kind, object_id))


def get_click(rt: Runtime, principal: Principal, click_id: str) -> Click:
    """A click by ID (``GET /v1/clicks/:id``): an App key reads its own App's in its own mode, a session
    those of its organizations' Apps in either mode.

    Errors: ``click_not_found`` (also another tenant's), ``mode_mismatch`` (a key of the other mode)."""
    result: Click = get_activity(rt, principal, CLICKS, click_id)
    return result


def get_customer(rt: Runtime, principal: Principal, customer_id: str) -> Customer:
    """A customer by ID (``GET /v1/customers/:id``): an App key reads its own App's in its own mode, a
    session those of its organizations' Apps in either mode.

    Errors: ``customer_not_found`` (also another tenant's), ``mode_mismatch`` (a key of the other mode)."""
    result: Customer = get_activity(rt, principal, CUSTOMERS, customer_id)
    return result


def get_referral(rt: Runtime, principal: Principal, referral_id: str) -> Referral:
    """A referral by ID (``GET /v1/referrals/:id``): an App key reads its own App's in its own mode, a
    session those of its organizations' Apps in either mode.

    Errors: ``referral_not_found`` (also another tenant's), ``mode_mismatch`` (a key of the other mode)."""
    result: Referral = get_activity(rt, principal, REFERRALS, referral_id)
    return result


def get_refund(rt: Runtime, principal: Principal, transaction_id: str) -> Refund:
    """A refund by ID (``GET /v1/transactions/refunds/:id``): an App key reads its own App's in its own
    mode, a session those of its organizations' Apps in either mode.

    Errors: ``refund_not_found`` (also another tenant's), ``mode_mismatch`` (a key of the other mode)."""
    result: Refund = get_activity(rt, principal, REFUNDS, transaction_id)
    return result


def get_dispute(rt: Runtime, principal: Principal, dispute_id: str) -> Dispute:
    """A dispute by ID (``GET /v1/transactions/disputes/:id``): an App key reads its own App's in its own
    mode, a session those of its organizations' Apps in either mode.

    Errors: ``dispute_not_found`` (also another tenant's), ``mode_mismatch`` (a key of the other mode)."""
    result: Dispute = get_activity(rt, principal, DISPUTES, dispute_id)
    return result


def get_transaction(rt: Runtime, principal: Principal, transaction_id: str) -> Payment | Refund:
    """A ``txn_`` is a payment or a refund (interface 2.1); either is answered.

    ``GET /v1/transactions/:id``. Errors: ``transaction_not_found``, ``mode_mismatch``."""

    def work(tx: Tx) -> Payment | Refund:
        try:
            if tx.uow.refunds.get(transaction_id) is not None:
                refund: Refund = find_visible(tx, principal, REFUNDS, transaction_id)
                return refund
            payment: Payment = find_visible(tx, principal, PAYMENTS, transaction_id)
            return payment
        except NotFound:
            # One code whatever the ID names elsewhere, so it tells nothing of other tenants.
            raise NotFound.of("transaction", transaction_id) from None

    return rt.read(work)


def get_commission_entry(rt: Runtime, principal: Principal, entry_id: str) -> JsonObject:
    """One entry in its public form, with the status :func:`list_commissions` derives for it.

    Read through the list of its payment's entries so that the derived status (pending, held,
    approved, processing, paid) comes from the one place that computes it.

    ``GET /v1/commissions/:id``. Errors: ``commission_not_found``, ``mode_mismatch``.
    """
    entry: CommissionEntry = get_activity(rt, principal, COMMISSIONS, entry_id)
    scope = Scope(app_id=entry.app_id, mode=entry.mode)
    cursor: str | None = None
    while True:
        page = list_commissions(
            rt, scope, {"transaction_id": entry.transaction_id}, limit=MAX_LIMIT, starting_after=cursor
        )
        for item in page.data:
            if item["id"] == entry.id:
                return item
        if not page.has_more or not page.data:
            raise NotFound.of(COMMISSIONS.resource, entry_id)
        cursor = str(page.data[-1]["id"])


def list_commission_entries(rt: Runtime, principal: Principal, query: ActivityQuery) -> EntryPage:
    """``GET /v1/commissions``: the scope and filters checked here, the page from the ledger.

    Errors: ``forbidden`` (an affiliate key), ``validation_error`` (an unknown filter, a bad
    ``environment`` or ``limit``, a session naming no App), ``mode_mismatch``,
    ``invalid_starting_after``, ``app_not_found``, ``program_not_found``, and the
    ``<resource>_not_found`` of a filter's ID."""
    scope = scope_of_query(rt, principal, COMMISSIONS, query)
    return list_commissions(
        rt, scope, dict(query.filters), limit=query.limit, starting_after=query.starting_after
    )
