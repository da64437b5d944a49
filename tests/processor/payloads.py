"""Processor event payloads shaped like the processor's real ones, and their signatures.

The objects follow the processor's documented API examples field for field (a Charge, a Refund,
a Dispute, and the Event envelope of a Connect delivery, which names the connected ``account``),
so the code under test meets the shape it will meet in production, unknown fields included.
``tests/processor/test_payloads.py`` checks that the official ``stripe`` package parses each of
them into its own typed classes.

:func:`sign` computes the ``Stripe-Signature`` header independently of the code under test
(plain ``hmac``), at a timestamp the test chooses: the server's manual clock, or a moment
outside the tolerance.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
from datetime import datetime
from typing import Any

JSON = dict[str, Any]

API_VERSION = "2024-06-20"
_counter = itertools.count(1)


def _unique(prefix: str) -> str:
    return f"{prefix}_3Pb{next(_counter):08d}LkdIwHu7ix"


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def charge(
    *,
    charge_id: str,
    amount: int,
    currency: str = "usd",
    metadata: dict[str, str] | None = None,
    captured: bool = True,
    amount_refunded: int = 0,
    refunds: list[JSON] | None = None,
    created: datetime,
    livemode: bool = False,
    status: str = "succeeded",
) -> JSON:
    """A Charge as the processor's API reference shows it."""
    obj: JSON = {
        "id": charge_id,
        "object": "charge",
        "amount": amount,
        "amount_captured": amount if captured else 0,
        "amount_refunded": amount_refunded,
        "application": None,
        "application_fee": None,
        "application_fee_amount": None,
        "balance_transaction": _unique("txn") if captured else None,
        "billing_details": {
            "address": {
                "city": None,
                "country": "US",
                "line1": None,
                "line2": None,
                "postal_code": "42424",
                "state": None,
            },
            "email": "jenny.rosen@example.com",
            "name": "Jenny Rosen",
            "phone": None,
        },
        "calculated_statement_descriptor": "ACME",
        "captured": captured,
        "created": _epoch(created),
        "currency": currency,
        "customer": "cus_NffrFeUfNV2Hib",
        "description": "Subscription creation",
        "disputed": False,
        "failure_balance_transaction": None,
        "failure_code": None,
        "failure_message": None,
        "fraud_details": {},
        "invoice": None,
        "livemode": livemode,
        "metadata": dict(metadata or {}),
        "on_behalf_of": None,
        "outcome": {
            "network_status": "approved_by_network",
            "reason": None,
            "risk_level": "normal",
            "risk_score": 32,
            "seller_message": "Payment complete.",
            "type": "authorized",
        },
        "paid": status == "succeeded",
        "payment_intent": _unique("pi"),
        "payment_method": _unique("pm"),
        "payment_method_details": {
            "card": {
                "amount_authorized": amount,
                "brand": "visa",
                "checks": {
                    "address_line1_check": None,
                    "address_postal_code_check": "pass",
                    "cvc_check": "pass",
                },
                "country": "US",
                "exp_month": 3,
                "exp_year": 2030,
                "fingerprint": "Xt5EWLLDS7FJjR1c",
                "funding": "credit",
                "last4": "4242",
                "network": "visa",
                "three_d_secure": None,
                "wallet": None,
            },
            "type": "card",
        },
        "receipt_email": None,
        "receipt_number": None,
        "receipt_url": "https://pay.stripe.com/receipts/payment/CAcaFwoVYWNjdF8xTTJKVGtMa2RJd0h1N2l4",
        "refunded": amount_refunded == amount and amount > 0,
        "review": None,
        "shipping": None,
        "source_transfer": None,
        "statement_descriptor": None,
        "statement_descriptor_suffix": None,
        "status": status,
        "transfer_data": None,
        "transfer_group": None,
    }
    if refunds is not None:
        obj["refunds"] = {
            "object": "list",
            "data": refunds,
            "has_more": False,
            "total_count": len(refunds),
            "url": f"/v1/charges/{charge_id}/refunds",
        }
    return obj


def refund(
    *, refund_id: str, charge_id: str, amount: int, created: datetime, status: str = "succeeded"
) -> JSON:
    """A Refund as the processor's API reference shows it."""
    return {
        "id": refund_id,
        "object": "refund",
        "amount": amount,
        "balance_transaction": _unique("txn"),
        "charge": charge_id,
        "created": _epoch(created),
        "currency": "usd",
        "destination_details": {"card": {"reference_status": "pending", "type": "refund"}, "type": "card"},
        "metadata": {},
        "payment_intent": _unique("pi"),
        "reason": "requested_by_customer",
        "receipt_number": None,
        "source_transfer_reversal": None,
        "status": status,
        "transfer_reversal": None,
    }


def dispute(*, dispute_id: str, charge_id: str, amount: int, status: str, created: datetime) -> JSON:
    """A Dispute as the processor's API reference shows it."""
    return {
        "id": dispute_id,
        "object": "dispute",
        "amount": amount,
        "balance_transactions": [],
        "charge": charge_id,
        "created": _epoch(created),
        "currency": "usd",
        "evidence": {
            "access_activity_log": None,
            "billing_address": None,
            "cancellation_policy": None,
            "customer_email_address": None,
            "customer_name": None,
            "product_description": None,
            "receipt": None,
            "refund_policy": None,
            "uncategorized_text": None,
        },
        "evidence_details": {
            "due_by": _epoch(created) + 14 * 86400,
            "has_evidence": False,
            "past_due": False,
            "submission_count": 0,
        },
        "is_charge_refundable": status.startswith("warning_") or status == "needs_response",
        "livemode": False,
        "metadata": {},
        "payment_intent": None,
        "payment_method_details": {"card": {"brand": "visa", "network_reason_code": "10.4"}, "type": "card"},
        "reason": "fraudulent",
        "status": status,
    }


def event(
    event_type: str,
    obj: JSON,
    *,
    account: str,
    livemode: bool,
    created: datetime,
    event_id: str | None = None,
) -> JSON:
    """The Event envelope of a delivery from a connected account (it names ``account``)."""
    return {
        "id": event_id or _unique("evt"),
        "object": "event",
        "account": account,
        "api_version": API_VERSION,
        "created": _epoch(created),
        "data": {"object": obj},
        "livemode": livemode,
        "pending_webhooks": 1,
        "request": {"id": _unique("req"), "idempotency_key": None},
        "type": event_type,
    }


def encode(payload: JSON) -> bytes:
    """The body as the processor sends it (pretty-printed JSON, as its deliveries are)."""
    return json.dumps(payload, indent=2).encode("utf-8")


def sign(body: bytes, secret: str, at: datetime) -> str:
    """``Stripe-Signature``: ``t=<seconds>,v1=<hex HMAC-SHA256 of "t.body">``."""
    timestamp = _epoch(at)
    digest = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"
