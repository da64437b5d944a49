"""Payouts (interface 3.2, 4.5, 6.5; decisions 5, 11). Live only; the service never moves money.

- Affiliate side (``key_aff_…``, with ``program_id``): payout details, balance, requests.
- Developer side (a session or a Live App key): requests, ready payouts and their CSV export,
  mark-paid, payout batches and their dispatch. A Test key is ``403 live_key_required``.
- The App's payout system (a Live App key of the exact App): execution instructions and the
  ``succeeded`` / ``failed`` reports, each with an ``Idempotency-Key`` header.
"""

from __future__ import annotations

from typing import Literal

from attrs import field, frozen

from refcore import payout_representation as views
from refcore.errors import ValidationError
from refcore.models.payout import PayoutBatchStatus, PayoutExecutionStatus
from refcore.representation import JsonObject, represent
from refcore.services import payout_accounts, payout_executions, payout_requests, payouts
from refcore.services.principal import PrincipalKind
from refcore_http.endpoints import (
    DEVELOPER,
    LIVE_APP_KEY,
    PAGING,
    Access,
    Call,
    Endpoint,
    HeaderParam,
    Output,
    QueryParam,
    Reply,
    created,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import listing
from refcore_http.schemas import (
    BOOLEAN,
    INTEGER,
    NOT_NULL,
    OBJECTS,
    STRING,
    TIMESTAMP,
    enum,
    nullable,
    ref,
    shape,
)

AFFILIATE = Access(
    "affiliate_key",
    frozenset({PrincipalKind.AFFILIATE_KEY}),
    description="an affiliate key (key_aff_…)",
)
AFFILIATE_OR_DEVELOPER = Access(
    "affiliate_key_or_developer",
    frozenset(
        {PrincipalKind.AFFILIATE_KEY, PrincipalKind.SESSION, PrincipalKind.APP_KEY, PrincipalKind.MANAGED_KEY}
    ),
    description="an affiliate key, a dashboard session or a Live App key",
)

_PROGRAM = QueryParam("program_id", "The program (prg_…)", required=True)
_AFFILIATE_FOR_DEVELOPER = QueryParam(
    "program_affiliate_id", "Which affiliate (Developer callers; affiliate keys read their own)"
)
_CSV = Output(schema=None, media_type="text/csv")


# -- bodies ----------------------------------------------------------------------------------


@frozen
class PayoutDetailsBody:
    """Where to be paid. ``paypal`` needs ``email``; ``bank_transfer`` needs ``account_holder`` and
    ``iban``; ``other`` needs ``notes``. ``PUT`` replaces the whole record."""

    method: Literal["paypal", "bank_transfer", "other"]
    email: str | None = field(default=None, metadata={"description": "PayPal e-mail address"})
    account_holder: str | None = None
    iban: str | None = field(default=None, metadata={"description": "Spaces allowed; stored compact"})
    notes: str | None = None


@frozen
class ProgramScope:
    """The program this call is about."""

    program_id: str = field(metadata={"description": "prg_…"})


# -- affiliate side --------------------------------------------------------------------------


def get_payout_details(call: Call) -> Reply:
    details = payout_accounts.get_payout_details(
        call.runtime, call.who, call.query["program_id"], call.query.get("program_affiliate_id")
    )
    return ok(represent(details))


def save_payout_details(call: Call) -> Reply:
    body: PayoutDetailsBody = call.body
    values = {name: getattr(body, name) for name in call.sent}
    return ok(
        represent(
            payout_accounts.save_payout_details(call.runtime, call.who, call.query["program_id"], values)
        )
    )


def get_payout_balance(call: Call) -> Reply:
    view = payout_accounts.get_payout_balance(
        call.runtime, call.who, call.query["program_id"], call.query.get("program_affiliate_id")
    )
    return ok(
        views.represent_balance(view.program_id, view.program_affiliate_id, view.currency, view.balance)
    )


def create_payout_request(call: Call) -> Reply:
    body: ProgramScope = call.body
    return created(represent(payout_requests.create_payout_request(call.runtime, call.who, body.program_id)))


def list_payout_requests(call: Call) -> Reply:
    page = payout_requests.list_payout_requests(
        call.runtime,
        call.who,
        program_id=call.query.get("program_id"),
        program_affiliate_id=call.query.get("program_affiliate_id"),
        status=call.query.get("status"),
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def get_payout_request(call: Call) -> Reply:
    return ok(represent(payout_requests.get_payout_request(call.runtime, call.who, call.params["id"])))


def decline_payout_request(call: Call) -> Reply:
    return ok(represent(payout_requests.decline_payout_request(call.runtime, call.who, call.params["id"])))


# -- ready payouts ---------------------------------------------------------------------------


def _ready(row: payouts.ReadyPayout) -> JsonObject:
    return views.represent_ready_payout(row.affiliate, row.amount, row.currency, row.execution, row.details)


def list_ready_payouts(call: Call) -> Reply:
    page = payouts.list_ready_payouts(
        call.runtime,
        call.who,
        call.query["program_id"],
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page, _ready)


def export_ready_payouts(call: Call) -> Reply:
    body: ProgramScope = call.body
    text = payouts.ready_payouts_csv(call.runtime, call.who, body.program_id)
    return Reply(body=None, text=text, media_type="text/csv; charset=utf-8")


@frozen
class MarkPaidBody:
    """Optional: the amount the operator paid, so that nothing else is recorded as paid."""

    amount: int | None = field(
        default=None,
        metadata={
            NOT_NULL: True,
            "description": "The ready payout's amount, in minor units: mark-paid records the payout"
            " only if it is exactly this, else 409 state_conflict and nothing changes",
            "minimum": 1,
            "maximum": payouts.MAX_PAYOUT_AMOUNT,
        },
    )


def mark_payout_paid(call: Call) -> Reply:
    body: MarkPaidBody = call.body
    execution = payouts.mark_paid(
        call.runtime, call.who, call.params["programAffiliateId"], amount=body.amount
    )
    return ok(represent(execution))


# -- batches ---------------------------------------------------------------------------------


def _batch(view: payouts.BatchView) -> JsonObject:
    return views.represent_batch_with_executions(view.batch, view.executions)


def prepare_payout_batch(call: Call) -> Reply:
    body: ProgramScope = call.body
    batch = payouts.prepare_batch(call.runtime, call.who, body.program_id)
    return created(_batch(payouts.get_batch(call.runtime, call.who, batch.id)))


def list_payout_batches(call: Call) -> Reply:
    page = payouts.list_batches(
        call.runtime,
        call.who,
        program_id=call.query.get("program_id"),
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def get_payout_batch(call: Call) -> Reply:
    return ok(_batch(payouts.get_batch(call.runtime, call.who, call.params["id"])))


def dispatch_payout_batch(call: Call) -> Reply:
    return ok(_batch(payouts.dispatch_batch(call.runtime, call.who, call.params["id"])))


def cancel_payout_batch(call: Call) -> Reply:
    return ok(_batch(payouts.cancel_batch(call.runtime, call.who, call.params["id"])))


# -- executions ------------------------------------------------------------------------------


def get_payout_execution(call: Call) -> Reply:
    return ok(payout_executions.get_instructions(call.runtime, call.who, call.params["id"]))


def _report(call: Call, outcome: PayoutExecutionStatus) -> Reply:
    result = payout_executions.report_outcome(
        call.runtime,
        call.who,
        call.params["id"],
        outcome,
        idempotency_key=_idempotency_key(call),
    )
    return ok(represent(result.execution))


def _idempotency_key(call: Call) -> str | None:
    """The report's ``Idempotency-Key``; sent twice, ``validation_error`` whatever the values.

    The first value had been used silently, while a proxy in front may keep the other: the
    report applied under one key, and its retry with the other was refused (probe H). Like
    several ``Authorization`` headers, several keys are refused before anything is done."""
    sent = call.headers.getlist("idempotency-key")
    if len(sent) > 1:
        raise ValidationError(
            "Send one Idempotency-Key header; this request has several", param="Idempotency-Key"
        )
    return sent[0] if sent else None


def report_payout_succeeded(call: Call) -> Reply:
    return _report(call, PayoutExecutionStatus.SUCCEEDED)


def report_payout_failed(call: Call) -> Reply:
    return _report(call, PayoutExecutionStatus.FAILED)


# -- response schemas ------------------------------------------------------------------------


def _resource(object_type: str, fields: dict[str, JsonObject]) -> JsonObject:
    """A payout object: ``id``, ``object``, ``created_at`` and its own fields."""
    return shape({"id": STRING, "object": {"const": object_type}, "created_at": TIMESTAMP, **fields})


_DETAILS_FIELDS: dict[str, JsonObject] = {
    "method": enum("paypal", "bank_transfer", "other"),
    "email": nullable(STRING),
    "account_holder": nullable(STRING),
    "iban": nullable(STRING),
    "notes": nullable(STRING),
}
_EXECUTION_FIELDS: dict[str, JsonObject] = {
    "livemode": {"const": True},
    "program_id": STRING,
    "program_affiliate_id": STRING,
    "batch_id": nullable(STRING),
    "amount": INTEGER,
    "currency": STRING,
    "status": enum(*(status.value for status in PayoutExecutionStatus)),
    "completed_at": nullable(TIMESTAMP),
    "completed_manually": BOOLEAN,
    "outcome_reason": nullable(STRING),
}
_BATCH_FIELDS: dict[str, JsonObject] = {
    "livemode": {"const": True},
    "program_id": STRING,
    "status": enum(*(status.value for status in PayoutBatchStatus)),
    "total": INTEGER,
    "currency": STRING,
    "execution_count": INTEGER,
    "dispatched_at": nullable(TIMESTAMP),
    "canceled_at": nullable(TIMESTAMP),
}

#: Registered with the other response objects of :mod:`refcore_http.schemas` for the OpenAPI document.
SCHEMAS: dict[str, JsonObject] = {
    "PayoutDetails": _resource(
        "payout_details",
        {
            "program_id": STRING,
            "program_affiliate_id": STRING,
            "updated_at": TIMESTAMP,
            **_DETAILS_FIELDS,
        },
    ),
    "PayoutBalance": shape(
        {
            "object": {"const": "payout_balance"},
            "livemode": {"const": True},
            "program_id": STRING,
            "program_affiliate_id": STRING,
            "currency": STRING,
            "pending": INTEGER,
            "held": INTEGER,
            "available": INTEGER,
            "processing": INTEGER,
            "paid": INTEGER,
        }
    ),
    "PayoutRequest": _resource(
        "payout_request",
        {
            "livemode": {"const": True},
            "program_id": STRING,
            "program_affiliate_id": STRING,
            "amount": INTEGER,
            "currency": STRING,
            "status": enum("open", "declined", "paid"),
            "decided_at": nullable(TIMESTAMP),
            "payout_execution_id": nullable(STRING),
        },
    ),
    "ReadyPayout": shape(
        {
            "id": STRING,
            "object": {"const": "ready_payout"},
            "created_at": TIMESTAMP,
            "livemode": {"const": True},
            "program_affiliate_id": STRING,
            "program_id": STRING,
            "email": STRING,
            "name": STRING,
            "amount": INTEGER,
            "currency": STRING,
            "payout_execution_id": nullable(STRING),
            "payout_details": nullable(shape(_DETAILS_FIELDS)),
        }
    ),
    "PayoutExecution": _resource("payout_execution", _EXECUTION_FIELDS),
    "PayoutBatch": _resource("payout_batch", _BATCH_FIELDS),
    "PayoutBatchWithExecutions": _resource(
        "payout_batch",
        {**_BATCH_FIELDS, "executions": {"type": "array", "items": ref("PayoutExecution")}},
    ),
    "PayoutInstructions": _resource(
        "payout_execution",
        {
            **_EXECUTION_FIELDS,
            "commission_entry_ids": {"type": "array", "items": STRING},
            "instructions": shape(
                {
                    "program_affiliate_id": STRING,
                    "email": STRING,
                    "name": STRING,
                    "amount": INTEGER,
                    "currency": STRING,
                    "payout_details": nullable(shape(_DETAILS_FIELDS)),
                }
            ),
        },
    ),
}
OBJECTS.update(SCHEMAS)


_TAGS = ("payouts",)
_IDEMPOTENCY = (
    "Send an Idempotency-Key header (required). The first report applies; a replay with the same key "
    "answers the stored result; a different outcome or key for a finished execution is 409 state_conflict. "
    "A key names one report of the App: a key already used to report another execution is "
    "409 idempotency_conflict."
)
_IDEMPOTENCY_KEY = HeaderParam("Idempotency-Key", "A unique value per report; a replay sends the same one.")

ROUTES = (
    Endpoint(
        "GET",
        "/v1/payout-details",
        "Read payout details",
        get_payout_details,
        AFFILIATE_OR_DEVELOPER,
        returns("PayoutDetails"),
        query=(_PROGRAM, _AFFILIATE_FOR_DEVELOPER),
        tags=_TAGS,
    ),
    Endpoint(
        "PUT",
        "/v1/payout-details",
        "Save the affiliate's payout details",
        save_payout_details,
        AFFILIATE,
        returns("PayoutDetails"),
        body=PayoutDetailsBody,
        query=(_PROGRAM,),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/payout-balance",
        "Read the payout balance (pending, held, available, processing, paid)",
        get_payout_balance,
        AFFILIATE_OR_DEVELOPER,
        returns("PayoutBalance"),
        query=(_PROGRAM, _AFFILIATE_FOR_DEVELOPER),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/payout-requests",
        "List payout requests",
        list_payout_requests,
        AFFILIATE_OR_DEVELOPER,
        returns_list("PayoutRequest"),
        query=(
            QueryParam("program_id", "The program (required for sessions)"),
            QueryParam("program_affiliate_id", "Only this affiliate's requests"),
            QueryParam("status", "Only requests in this status", enum=("open", "declined", "paid")),
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/payout-requests",
        "Request a payout of the available balance",
        create_payout_request,
        AFFILIATE,
        returns("PayoutRequest", 201),
        body=ProgramScope,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/payout-requests/:id",
        "Read a payout request",
        get_payout_request,
        AFFILIATE_OR_DEVELOPER,
        returns("PayoutRequest"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/payout-requests/:id/decline",
        "Decline an open payout request",
        decline_payout_request,
        DEVELOPER,
        returns("PayoutRequest"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/ready-payouts",
        "List the payouts ready to pay",
        list_ready_payouts,
        DEVELOPER,
        returns_list("ReadyPayout"),
        query=(_PROGRAM, *PAGING),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/ready-payouts/csv",
        "Export the current ready payouts as CSV",
        export_ready_payouts,
        DEVELOPER,
        _CSV,
        body=ProgramScope,
        description="text/csv, one row per affiliate; formula-like cells get a leading '.",
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/ready-payouts/:programAffiliateId/mark-paid",
        "Mark one affiliate paid (completes its ready payout)",
        mark_payout_paid,
        DEVELOPER,
        returns("PayoutExecution"),
        body=MarkPaidBody,
        body_optional=True,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/payout-batches",
        "List payout batches",
        list_payout_batches,
        DEVELOPER,
        returns_list("PayoutBatch"),
        query=(QueryParam("program_id", "The program (required for sessions)"), *PAGING),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/payout-batches",
        "Prepare a payout batch from the current ready payouts (freezes their entries)",
        prepare_payout_batch,
        DEVELOPER,
        returns("PayoutBatchWithExecutions", 201),
        body=ProgramScope,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/payout-batches/:id",
        "Read a payout batch and its executions",
        get_payout_batch,
        DEVELOPER,
        returns("PayoutBatchWithExecutions"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/payout-batches/:id/dispatch",
        "Dispatch a prepared batch: executions become ready, one payout.ready each",
        dispatch_payout_batch,
        DEVELOPER,
        returns("PayoutBatchWithExecutions"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/payout-batches/:id/cancel",
        "Cancel a prepared batch: its executions are canceled and their money is available again",
        cancel_payout_batch,
        DEVELOPER,
        returns("PayoutBatchWithExecutions"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/payout-executions/:id",
        "Fetch payout instructions (a Live App key of the exact App)",
        get_payout_execution,
        LIVE_APP_KEY,
        returns("PayoutInstructions"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/payout-executions/:id/succeeded",
        "Report that a payout was paid",
        report_payout_succeeded,
        LIVE_APP_KEY,
        returns("PayoutExecution"),
        description=_IDEMPOTENCY,
        headers=(_IDEMPOTENCY_KEY,),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/payout-executions/:id/failed",
        "Report that a payout failed (its entries become available again)",
        report_payout_failed,
        LIVE_APP_KEY,
        returns("PayoutExecution"),
        description=_IDEMPOTENCY,
        headers=(_IDEMPOTENCY_KEY,),
        tags=_TAGS,
    ),
)
