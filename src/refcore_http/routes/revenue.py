"""Revenue: payments, refunds, disputes and commission entries (interface 2.6-2.8, 4.1).

A new payment, refund or dispute answers ``201``; an exact replay, and a status change of an
existing dispute, ``200`` (decisions 11). Caller-chosen IDs (``payment_id``, ``refund_id``,
``dispute_id``) are looked up in the key's mode only.
"""

from __future__ import annotations

from typing import Literal

from attrs import field, frozen

from refcore.models.revenue import Dispute, DisputeStatus, Payment, Refund
from refcore.representation import represent
from refcore.services import activity
from refcore.services.access import activity_scope
from refcore.services.revenue import (
    DisputeReport,
    PaymentReport,
    Recorded,
    RefundReport,
    record_payment,
    record_refund,
    report_dispute,
)
from refcore_http.endpoints import (
    APP_ID,
    APP_KEY,
    DEVELOPER,
    ENVIRONMENT,
    PAGING,
    Call,
    Endpoint,
    QueryParam,
    Reply,
    filter_param,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import activity_query, by_path_id, list_body, listing

_AMOUNT = "Minor units; a signed 32-bit integer"


@frozen
class PaymentBody:
    """A successful payment (interface 2.6); ``payment_id`` is the caller's stable ID."""

    payment_id: str
    customer_id: str = field(metadata={"description": "rcus_… from identify"})
    program_id: str = field(metadata={"description": "prg_… from identify"})
    amount: int = field(metadata={"description": _AMOUNT + ", >= 0", "minimum": 0, "maximum": 2**31 - 1})
    currency: str = field(metadata={"description": "Lowercase ISO 4217; the program currency"})


@frozen
class RefundBody:
    """A refund of an accepted payment (interface 2.7)."""

    refund_id: str
    payment_id: str = field(metadata={"description": "The caller's payment_id of the parent payment"})
    amount: int = field(metadata={"description": _AMOUNT + ", > 0", "minimum": 1, "maximum": 2**31 - 1})


@frozen
class DisputeBody:
    """One status report of a dispute (interface 2.8, 3.1); identity repeated unchanged each time."""

    dispute_id: str
    payment_id: str
    status: Literal["opened", "won", "withdrawn", "lost", "funds_reinstated"]
    amount: int = field(metadata={"description": _AMOUNT + ", > 0", "minimum": 1, "maximum": 2**31 - 1})


def _recorded(result: Recorded[Payment | Refund | Dispute]) -> Reply:
    return Reply(body=represent(result.record), status=201 if result.created else 200)


def create_payment(call: Call) -> Reply:
    body: PaymentBody = call.body
    report = PaymentReport(
        payment_id=body.payment_id,
        customer_id=body.customer_id,
        program_id=body.program_id,
        amount=body.amount,
        currency=body.currency,
    )
    return _recorded(record_payment(call.runtime, activity_scope(call.who), report))


def create_refund(call: Call) -> Reply:
    body: RefundBody = call.body
    report = RefundReport(refund_id=body.refund_id, payment_id=body.payment_id, amount=body.amount)
    return _recorded(record_refund(call.runtime, activity_scope(call.who), report))


def report_dispute_status(call: Call) -> Reply:
    body: DisputeBody = call.body
    report = DisputeReport(
        dispute_id=body.dispute_id, payment_id=body.payment_id, status=body.status, amount=body.amount
    )
    return _recorded(report_dispute(call.runtime, activity_scope(call.who), report))


def list_transactions(call: Call) -> Reply:
    return listing(activity.list_payments(call.runtime, call.who, activity_query(call)))


def get_transaction(call: Call) -> Reply:
    return ok(represent(by_path_id(call, activity.get_transaction)))


def list_refunds(call: Call) -> Reply:
    return listing(activity.list_refunds(call.runtime, call.who, activity_query(call)))


def get_refund(call: Call) -> Reply:
    return ok(represent(by_path_id(call, activity.get_refund)))


def list_disputes(call: Call) -> Reply:
    return listing(activity.list_disputes(call.runtime, call.who, activity_query(call)))


def get_dispute(call: Call) -> Reply:
    return ok(represent(by_path_id(call, activity.get_dispute)))


def list_commissions(call: Call) -> Reply:
    page = activity.list_commission_entries(call.runtime, call.who, activity_query(call))
    return ok(list_body(page.data, page.has_more))


def get_commission(call: Call) -> Reply:
    return ok(by_path_id(call, activity.get_commission_entry))


_TAGS = ("revenue",)
_PROGRAM = filter_param("program_id", "Only this program's objects (sessions: also names the App)")
_AFFILIATE = filter_param("program_affiliate_id", "Only this program affiliate's objects")
_TRANSACTION = filter_param("transaction_id", "Only objects of this payment (txn_…)")
_PAYMENT_ID = filter_param("payment_id", "Only objects of the payment with this caller ID")

ROUTES = (
    Endpoint(
        "POST",
        "/v1/transactions",
        "Report a payment",
        create_payment,
        APP_KEY,
        returns("Transaction", 201, 200),
        body=PaymentBody,
        tags=_TAGS,
        batched=True,
    ),
    Endpoint(
        "GET",
        "/v1/transactions",
        "List payments",
        list_transactions,
        DEVELOPER,
        returns_list("Transaction"),
        query=(
            APP_ID,
            ENVIRONMENT,
            _PROGRAM,
            _AFFILIATE,
            filter_param("customer_id", "Only this customer's payments"),
            _PAYMENT_ID,
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/transactions/:id",
        "Read a transaction (payment or refund)",
        get_transaction,
        DEVELOPER,
        returns("PaymentOrRefund"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/transactions/refunds",
        "Report a refund",
        create_refund,
        APP_KEY,
        returns("Refund", 201, 200),
        body=RefundBody,
        tags=_TAGS,
        batched=True,
    ),
    Endpoint(
        "GET",
        "/v1/transactions/refunds",
        "List refunds",
        list_refunds,
        DEVELOPER,
        returns_list("Refund"),
        query=(APP_ID, ENVIRONMENT, _TRANSACTION, _PAYMENT_ID, *PAGING),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/transactions/refunds/:id",
        "Read a refund",
        get_refund,
        DEVELOPER,
        returns("Refund"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/transactions/disputes",
        "Report a dispute status",
        report_dispute_status,
        APP_KEY,
        returns("Dispute", 201, 200),
        body=DisputeBody,
        tags=_TAGS,
        batched=True,
    ),
    Endpoint(
        "GET",
        "/v1/transactions/disputes",
        "List disputes",
        list_disputes,
        DEVELOPER,
        returns_list("Dispute"),
        query=(
            APP_ID,
            ENVIRONMENT,
            _TRANSACTION,
            _PAYMENT_ID,
            QueryParam(
                "status", "Only disputes in this status", enum=tuple(status.value for status in DisputeStatus)
            ),
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/transactions/disputes/:id",
        "Read a dispute",
        get_dispute,
        DEVELOPER,
        returns("Dispute"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/commissions",
        "List commission entries",
        list_commissions,
        DEVELOPER,
        returns_list("CommissionEntry"),
        query=(APP_ID, ENVIRONMENT, _PROGRAM, _AFFILIATE, _TRANSACTION, *PAGING),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/commissions/:id",
        "Read a commission entry",
        get_commission,
        DEVELOPER,
        returns("CommissionEntry"),
        tags=_TAGS,
    ),
)
