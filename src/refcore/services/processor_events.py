"""Processor events as revenue: the same core operations as API revenue, with ``source=processor``.

The HTTP adapter verifies a delivery and translates the processor's own objects into the neutral
changes below (it knows the processor's vocabulary; the core does not). Each change is then
recorded by exactly the function the API routes use (:mod:`refcore.services.revenue`), with the
processor's object IDs as the stable IDs: the charge ID as ``payment_id``, the refund ID as
``refund_id``, the dispute ID as ``dispute_id``. Replays, duplicates and out-of-order deliveries
therefore behave exactly as the ledger rules say for API revenue: an exact replay is answered
with the stored record, a refund or dispute before its payment is ``payment_not_found`` (the
processor retries the delivery later, interface 4.1 rule 1), conflicting details are conflicts.

Unlike the API's refund and dispute reports, the processor's name their currency: it is passed
on, and the revenue service refuses a new refund or dispute (or a dispute's new status) whose
currency is not its payment's (``currency_mismatch``), compared under the payment's lock before
anything is recorded. A replay is still answered from the stored record first.

A payment is attributed through the ``processor_metadata`` that identify returned and the App
attached to the processor's payment object (interface 2.5): ``service_customer_id`` and
``service_program_id``. Without them the payment is still recorded, unattributed and with no
customer (decisions 4: it stays in history, earns nothing, and raises the setup alarm).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import field, frozen

from refcore.credentials import shown
from refcore.errors import IdempotencyConflict
from refcore.models import Dispute, DisputeStatus, Payment, Refund, RevenueSource
from refcore.services.principal import Scope
from refcore.services.revenue import (
    DisputeReport,
    PaymentReport,
    Recorded,
    RefundReport,
    UnattributedPaymentReport,
    record_payment,
    record_refund,
    record_unattributed_payment,
    report_dispute,
)
from refcore.services.runtime import Runtime
from refcore.validation import require_choice

#: The ``processor_metadata`` keys of the identify response (interface 2.5).
METADATA_CLICK_ID = "service_click_id"
METADATA_CUSTOMER_ID = "service_customer_id"
METADATA_PROGRAM_ID = "service_program_id"


def _frozen_metadata(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


@frozen
class ProcessorPayment:
    """A succeeded (captured) payment; ``metadata`` is the processor object's metadata."""

    payment_id: str
    amount: int
    currency: str
    metadata: dict[str, str] = field(factory=dict, converter=_frozen_metadata, hash=False)


@frozen
class ProcessorRefund:
    """A succeeded refund of the payment ``payment_id``, in ``currency`` (the processor's)."""

    refund_id: str
    payment_id: str
    amount: int
    currency: str


def _dispute_status(value: object) -> DisputeStatus:
    """A status from its member or its string (``"opened"``), as enumeration arguments take;
    ``validation_error`` for anything else (probe R: ``AttributeError`` when recorded)."""
    return require_choice(value, DisputeStatus, param="status")


@frozen
class ProcessorDispute:
    """One status of a dispute of the payment ``payment_id``, already in the interface's terms."""

    dispute_id: str
    payment_id: str
    amount: int
    status: DisputeStatus = field(converter=_dispute_status)
    currency: str
    #: The processor's status was an inquiry's (:attr:`refcore.models.Dispute.inquiry`).
    inquiry: bool = False


ProcessorChange = ProcessorPayment | ProcessorRefund | ProcessorDispute


def attribution_of(metadata: Mapping[str, str]) -> tuple[str, str] | None:
    """``(customer_id, program_id)`` from the identify metadata, or ``None`` when it is absent.

    Both keys must be present and non-blank: a payment that names a customer but no program (or
    the reverse) was not tagged by identify's ``processor_metadata`` and is kept unattributed.
    ``service_click_id`` is informative only: the customer's referral already records its click.
    """
    customer_id = metadata.get(METADATA_CUSTOMER_ID, "").strip()
    program_id = metadata.get(METADATA_PROGRAM_ID, "").strip()
    if not customer_id or not program_id:
        return None
    return customer_id, program_id


def apply_change(rt: Runtime, scope: Scope, change: ProcessorChange) -> Recorded[Payment | Refund | Dispute]:
    """Record one change in the App and mode of the connection the event was verified with.

    Errors: those of :func:`~refcore.services.revenue.record_payment`,
    :func:`~refcore.services.revenue.record_refund` and
    :func:`~refcore.services.revenue.report_dispute`."""
    source = RevenueSource.PROCESSOR
    if isinstance(change, ProcessorPayment):
        attribution = attribution_of(change.metadata)
        if attribution is None:
            return record_unattributed_payment(
                rt,
                scope,
                UnattributedPaymentReport(
                    payment_id=change.payment_id, amount=change.amount, currency=change.currency
                ),
                source=source,
            )
        customer_id, program_id = attribution
        return record_payment(
            rt,
            scope,
            PaymentReport(
                payment_id=change.payment_id,
                customer_id=customer_id,
                program_id=program_id,
                amount=change.amount,
                currency=change.currency,
            ),
            source=source,
        )
    if isinstance(change, ProcessorRefund):
        return record_refund(
            rt,
            scope,
            RefundReport(
                refund_id=change.refund_id,
                payment_id=change.payment_id,
                amount=change.amount,
                currency=change.currency,
            ),
            source=source,
        )
    return report_dispute(
        rt,
        scope,
        DisputeReport(
            dispute_id=change.dispute_id,
            payment_id=change.payment_id,
            status=change.status.value,
            amount=change.amount,
            currency=change.currency,
            inquiry=change.inquiry,
        ),
        source=source,
    )


def apply_changes(
    rt: Runtime, scope: Scope, changes: Sequence[ProcessorChange]
) -> list[Recorded[Payment | Refund | Dispute]]:
    """Record the changes of one event in order, each in its own unit of work.

    When one fails the error propagates and the delivery is answered with it; the processor
    delivers the event again later, and the changes already recorded answer as replays. An
    event that names one refund, payment or dispute twice with different details can never
    succeed, so it is refused whole before anything is recorded: its first refund had been
    recorded, and each redelivery answered ``409`` again (probe Q).

    Backs ``POST /v1/processor/events``, after the HTTP adapter verified the delivery. Errors: those of
    :func:`apply_change`; ``idempotency_conflict`` (one ID named twice, differently).
    """
    listed = list(changes)  # read once: a generator checked first would be empty after
    _require_one_version_of_each(listed)
    return [apply_change(rt, scope, change) for change in listed]


def _stable_id(change: ProcessorChange) -> tuple[str, str]:
    if isinstance(change, ProcessorPayment):
        return "payment", change.payment_id
    if isinstance(change, ProcessorRefund):
        return "refund", change.refund_id
    return "dispute", change.dispute_id


def _require_one_version_of_each(changes: Sequence[ProcessorChange]) -> None:
    """``idempotency_conflict`` when two changes share a stable ID but not their details; the
    same change listed twice is one change (each answers as a replay after the first)."""
    seen: dict[tuple[str, str], ProcessorChange] = {}
    for change in changes:
        key = _stable_id(change)
        first = seen.setdefault(key, change)
        if first != change:
            kind, id = key
            raise IdempotencyConflict(
                f"The event names {kind} {shown(id)} twice with different details; nothing was recorded"
            )
