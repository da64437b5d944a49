"""The processor's events, parsed with the official ``stripe`` package and mapped onto revenue.

Which events count (interface 4.1 rule 4: only once successful or complete):

============================================ ================================================
Event type                                    Revenue change
============================================ ================================================
``charge.succeeded``, ``charge.captured``     a payment, once the charge is ``succeeded`` and
                                              ``captured``: ``payment_id`` = the charge ID,
                                              ``amount`` = ``amount_captured``; the charge's
                                              ``metadata`` carries identify's keys
``charge.refunded``                           each ``succeeded`` refund in ``charge.refunds``
``refund.created``, ``refund.updated``,       the refund, once ``succeeded``: ``refund_id`` =
``charge.refund.updated``                     the ``re_…`` ID, ``payment_id`` = its charge,
                                              ``currency`` = the refund's
``charge.dispute.created``, ``.updated``,     the dispute in the status its object shows (below):
``.closed``, ``.funds_withdrawn``,            ``dispute_id`` = the ``dp_…`` ID, ``payment_id``
``.funds_reinstated``                         = its charge, ``amount`` = the dispute amount,
                                              ``currency`` = the dispute's
anything else                                 nothing (answered ``200``, ``handled: false``)
============================================ ================================================

The charge is the canonical payment (not the PaymentIntent or the invoice): every successful
payment of every product has exactly one, whatever created it, and refunds and disputes name it
directly. Its metadata is the PaymentIntent's, which the processor copies onto the charge when
the PaymentIntent is confirmed.

Dispute statuses map by the dispute object, not only by the event name, so that a late or
repeated event can never move a dispute backwards: ``needs_response``, ``under_review`` and the
inquiry statuses ``warning_needs_response`` / ``warning_under_review`` are ``opened``; ``won`` is
``won``; ``lost`` is ``lost``; ``warning_closed`` (an inquiry that never became a chargeback),
``prevented`` and ``charge_refunded`` are ``withdrawn``. An inquiry is reported as one
(``inquiry``): open, it holds the commission without consuming the payment, so a refund made
during it is recorded; reported later as ``needs_response`` or ``under_review`` it has escalated
to a chargeback, which consumes its amount. ``charge.dispute.funds_reinstated`` of a
``lost`` dispute is ``funds_reinstated``; of a ``won`` one (the usual case: the funds withdrawn
when it opened come back), it is ``won``.

A refund or dispute that counts must carry its ``currency``, three lowercase letters
(``validation_error``, ``param: currency``, when it is missing or malformed); the core compares it
with its payment's (``currency_mismatch``), under the payment's lock. The refunds a
``charge.refunded`` lists must also be in the charge's own currency (``currency_mismatch``), so
that such an event is refused whole, before its first refund is recorded.
"""

from __future__ import annotations

from typing import Any

import stripe
from attrs import frozen

from refcore.errors import CurrencyMismatch, ValidationError
from refcore.models import DisputeStatus
from refcore.rules.money import require_currency_format
from refcore.services.processor_events import (
    ProcessorChange,
    ProcessorDispute,
    ProcessorPayment,
    ProcessorRefund,
)

PAYMENT_EVENTS = frozenset({"charge.succeeded", "charge.captured"})
CHARGE_REFUNDED = "charge.refunded"
REFUND_EVENTS = frozenset({"refund.created", "refund.updated", "charge.refund.updated"})
DISPUTE_EVENTS = frozenset(
    {
        "charge.dispute.created",
        "charge.dispute.updated",
        "charge.dispute.closed",
        "charge.dispute.funds_withdrawn",
        "charge.dispute.funds_reinstated",
    }
)
FUNDS_REINSTATED = "charge.dispute.funds_reinstated"
HANDLED_EVENTS = PAYMENT_EVENTS | REFUND_EVENTS | DISPUTE_EVENTS | {CHARGE_REFUNDED}

_DISPUTE_STATUS: dict[str, DisputeStatus] = {
    "warning_needs_response": DisputeStatus.OPENED,
    "warning_under_review": DisputeStatus.OPENED,
    "needs_response": DisputeStatus.OPENED,
    "under_review": DisputeStatus.OPENED,
    "won": DisputeStatus.WON,
    "lost": DisputeStatus.LOST,
    "warning_closed": DisputeStatus.WITHDRAWN,
    "prevented": DisputeStatus.WITHDRAWN,
    "charge_refunded": DisputeStatus.WITHDRAWN,
}


#: The statuses of an inquiry (a retrieval request; no money has moved): an ``opened`` one
#: holds the commission and consumes nothing of the payment (``refcore.rules.disputes``).
_INQUIRY_STATUSES = frozenset({"warning_needs_response", "warning_under_review", "warning_closed"})


@frozen
class ProcessorEvent:
    """One verified delivery: who it is for and the revenue changes it carries, in order."""

    id: str
    type: str
    account: str
    livemode: bool
    handled: bool
    changes: tuple[ProcessorChange, ...]


def routing_of(values: dict[str, Any]) -> tuple[str, bool] | None:
    """``(account, livemode)``: which connection's secret verifies the event; ``None`` if absent.

    Read before verification (the account selects the secret), and used for nothing else until
    the signature has been checked.
    """
    account, livemode = values.get("account"), values.get("livemode")
    if not isinstance(account, str) or not account or not isinstance(livemode, bool):
        return None
    return account, livemode


def parse_event(values: dict[str, Any]) -> ProcessorEvent:
    """The event's revenue changes. Call only after the signature verified."""
    routing = routing_of(values)
    event_id, event_type = values.get("id"), values.get("type")
    if routing is None or not isinstance(event_id, str) or not isinstance(event_type, str):
        raise ValidationError("The body is not a processor event (id, type, account, livemode)")
    account, livemode = routing
    if event_type not in HANDLED_EVENTS:
        return ProcessorEvent(event_id, event_type, account, livemode, handled=False, changes=())
    try:
        obj = stripe.Event.construct_from(values, None).data.object
        changes = _changes(event_type, obj)
    except (AttributeError, KeyError, TypeError, ValueError):
        raise ValidationError(
            f"The data.object of this {event_type} event is not the object it should be", param="data"
        ) from None
    return ProcessorEvent(event_id, event_type, account, livemode, handled=True, changes=changes)


def _changes(event_type: str, obj: Any) -> tuple[ProcessorChange, ...]:
    if event_type in PAYMENT_EVENTS:
        charge = _expect(obj, stripe.Charge)
        return tuple(_payment(charge))
    if event_type == CHARGE_REFUNDED:
        charge = _expect(obj, stripe.Charge)
        refunds = charge.refunds.data if "refunds" in charge and charge.refunds is not None else []
        changes = tuple(
            change
            for refund in refunds
            for change in _refund(_expect(refund, stripe.Refund), charge_id=charge.id)
        )
        if changes:
            _require_charge_currency(charge, changes)
        return changes
    if event_type in REFUND_EVENTS:
        return tuple(_refund(_expect(obj, stripe.Refund)))
    return tuple(_dispute(_expect(obj, stripe.Dispute), event_type))


def _expect(obj: Any, cls: type[Any]) -> Any:
    if not isinstance(obj, cls):
        raise TypeError(f"expected a {cls.__name__}")
    return obj


def _currency(obj: stripe.StripeObject) -> str:
    """The refund's or dispute's ``currency``: three lowercase letters, or ``validation_error``.

    Missing is refused as malformed is: refcore records the amount against the payment, so an
    amount whose currency is unknown cannot be applied. Whether ISO 4217 lists it does not
    matter here: it must equal the payment's currency, which was checked when it was recorded.
    """
    return require_currency_format(getattr(obj, "currency", None), param="currency")


def _require_charge_currency(charge: stripe.Charge, changes: tuple[ProcessorChange, ...]) -> None:
    """The refunds a ``charge.refunded`` lists are in the charge's currency, or none is recorded.

    Each refund is recorded in its own unit of work; without this, a list whose second refund is
    in another currency would record the first before the second is refused.
    """
    currency = _currency(charge)
    for change in changes:
        if isinstance(change, ProcessorRefund) and change.currency != currency:
            raise CurrencyMismatch(
                f"refund {change.refund_id} is in {change.currency}, not in its charge's currency {currency}",
                param="currency",
            )


def _object_id(value: Any) -> str:
    """An expandable reference: the ID string, or the expanded object's ``id``."""
    identifier = value if isinstance(value, str) else value.id
    if not isinstance(identifier, str) or not identifier:
        raise ValueError("missing ID")
    return identifier


def _payment(charge: stripe.Charge) -> list[ProcessorChange]:
    if not isinstance(charge.captured, bool):
        # Typed as strictly as the charge's amounts and IDs: "false" or 1 had read as captured
        # and recorded a payment (probe F).
        raise ValueError("captured is not a boolean")
    if charge.status != "succeeded" or not charge.captured:
        return []  # an authorization only: the payment happens at charge.captured
    amount = charge.amount_captured if "amount_captured" in charge else charge.amount
    metadata = charge.metadata.to_dict() if "metadata" in charge and charge.metadata is not None else {}
    return [
        ProcessorPayment(
            payment_id=_object_id(charge.id),
            amount=amount,
            currency=charge.currency,
            metadata={str(k): str(v) for k, v in metadata.items()},
        )
    ]


def _refund(refund: stripe.Refund, *, charge_id: str | None = None) -> list[ProcessorChange]:
    named = refund.charge if "charge" in refund else None
    if charge_id is not None and named is not None and _object_id(named) != charge_id:
        # Listed in one charge's refunds, it had been applied to that charge whatever it named
        # (probe AG): the processor never sends such a list, so it is malformed.
        raise ValueError("a listed refund names another charge")
    if refund.status != "succeeded":
        return []  # pending, requires_action, failed or canceled: nothing was refunded (yet)
    charge = charge_id if charge_id is not None else _object_id(refund.charge)
    return [
        ProcessorRefund(
            refund_id=_object_id(refund.id),
            payment_id=charge,
            amount=refund.amount,
            currency=_currency(refund),
        )
    ]


def _dispute(dispute: stripe.Dispute, event_type: str) -> list[ProcessorChange]:
    status = _DISPUTE_STATUS.get(str(dispute.status))
    if status is None:
        return []  # a status this version does not know: changes nothing
    if event_type == FUNDS_REINSTATED and status is DisputeStatus.LOST:
        status = DisputeStatus.FUNDS_REINSTATED
    return [
        ProcessorDispute(
            dispute_id=_object_id(dispute.id),
            payment_id=_object_id(dispute.charge),
            amount=dispute.amount,
            status=status,
            currency=_currency(dispute),
            inquiry=str(dispute.status) in _INQUIRY_STATUSES,
        )
    ]
