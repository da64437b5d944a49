"""A processor refund or dispute in another currency than its payment is refused.

The processor's refund and dispute objects carry a ``currency``; refcore records only the amount,
against the payment the object names, so an amount in another currency would be applied as if it
were in the payment's (5000 yen refunded as 50.00 dollars). The currency must be a lowercase
three-letter code (``400 validation_error``, ``param: currency``, also when it is missing) and
equal the payment's (``400 currency_mismatch``), checked before anything is recorded: a refused
event changes nothing. A repeat of a refund or dispute already recorded is answered from the
stored record first, as every replay is (docs/processor.md). Run on every store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest

from refcore.clocks import ManualClock
from refcore.models import Mode, RevenueSource
from refcore.services.principal import Scope
from refcore.services.revenue import RefundReport, record_refund
from refcore.services.runtime import Runtime
from tests.http.world import JSON, Client, Tenant, expect, new_tenant
from tests.processor import payloads
from tests.processor.world import (
    Installation,
    commission_entries,
    connect,
    deliver,
    new_installation,
    referred_customer,
)

_MISSING = object()


@dataclass
class Paid:
    """A Live connection and its attributed charge ``ch_F1`` of 10000 usd (commission 2000)."""

    client: Client
    runtime: Runtime
    clock: ManualClock
    tenant: Tenant
    installation: Installation
    metadata: dict[str, str]

    def deliver(self, event_type: str, obj: JSON, *, event_id: str | None = None) -> httpx.Response:
        return deliver(
            self.client, self.installation, event_type, obj, at=self.clock.now(), event_id=event_id
        )

    def ledger(self) -> tuple[list[JSON], ...]:
        """Everything a refund or dispute could change: payments, refunds, disputes, entries."""
        key = self.tenant.live_key

        def listed(path: str) -> list[JSON]:
            return list(expect(self.client.get(path, key, limit=100), 200)["data"])

        return (
            listed("/v1/transactions"),
            listed("/v1/transactions/refunds"),
            listed("/v1/transactions/disputes"),
            commission_entries(self.client, key),
        )


@pytest.fixture
def paid(store_client: Client, store_runtime: Runtime, clock: ManualClock) -> Paid:
    tenant = new_tenant(store_client, store_runtime, "fin")
    installation = new_installation(livemode=True)
    connect(store_client, tenant, installation)
    who = referred_customer(store_client, tenant, tenant.live_key, "f1")
    world = Paid(store_client, store_runtime, clock, tenant, installation, who["processor_metadata"])
    charge = payloads.charge(
        charge_id="ch_F1", amount=10000, metadata=world.metadata, created=clock.now(), livemode=True
    )
    (payment,) = expect(world.deliver("charge.succeeded", charge), 200)["records"]
    assert (payment["currency"], payment["commission_amount"]) == ("usd", 2000)
    return world


def _with_currency(obj: JSON, currency: object) -> JSON:
    changed = dict(obj)
    if currency is _MISSING:
        del changed["currency"]
    else:
        changed["currency"] = currency
    return changed


def _refund(paid: Paid, currency: object = "usd", *, refund_id: str = "re_F1", amount: int = 5000) -> JSON:
    obj = payloads.refund(refund_id=refund_id, charge_id="ch_F1", amount=amount, created=paid.clock.now())
    return _with_currency(obj, currency)


def _dispute(paid: Paid, currency: object = "usd", *, status: str = "needs_response") -> JSON:
    obj = payloads.dispute(
        dispute_id="dp_F1", charge_id="ch_F1", amount=5000, status=status, created=paid.clock.now()
    )
    return _with_currency(obj, currency)


def _refund_event(paid: Paid, currency: object) -> tuple[str, JSON]:
    return "refund.created", _refund(paid, currency)


def _dispute_event(paid: Paid, currency: object) -> tuple[str, JSON]:
    return "charge.dispute.created", _dispute(paid, currency)


def _charge_refunded_event(paid: Paid, currency: object) -> tuple[str, JSON]:
    charge = payloads.charge(
        charge_id="ch_F1",
        amount=10000,
        metadata=paid.metadata,
        created=paid.clock.now(),
        livemode=True,
        amount_refunded=5000,
        refunds=[_refund(paid, currency)],
    )
    return "charge.refunded", charge


EventOf = Callable[[Paid, object], tuple[str, JSON]]
_KINDS: dict[str, EventOf] = {
    "refund": _refund_event,
    "charge_refunded": _charge_refunded_event,
    "dispute": _dispute_event,
}


def _refused_without_a_trace(paid: Paid, kind: str, currency: object, code: str) -> None:
    """The event of ``kind`` in ``currency`` is ``400 code`` on ``currency`` and changes no ledger."""
    before = paid.ledger()
    event_type, obj = _KINDS[kind](paid, currency)
    body = expect(paid.deliver(event_type, obj), 400, code)
    assert body["error"]["param"] == "currency"
    assert paid.ledger() == before


@pytest.mark.parametrize("currency", ["jpy", "eur"])
@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_a_processor_refund_or_dispute_in_another_currency_than_its_payment_is_refused(
    paid: Paid, kind: str, currency: str
) -> None:
    _refused_without_a_trace(paid, kind, currency, "currency_mismatch")


@pytest.mark.parametrize("currency", ["NOT-A-CURRENCY", "USD", "us", "usd\n", "", 840, None, _MISSING])
@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_a_processor_refund_or_dispute_without_a_well_formed_currency_is_a_validation_error(
    paid: Paid, kind: str, currency: object
) -> None:
    _refused_without_a_trace(paid, kind, currency, "validation_error")


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_a_processor_refund_or_dispute_in_its_payments_currency_is_recorded(paid: Paid, kind: str) -> None:
    event_type, obj = _KINDS[kind](paid, "usd")
    (record,) = expect(paid.deliver(event_type, obj), 200)["records"]
    (payment,) = paid.ledger()[0]
    if kind == "dispute":
        assert (record["object"], record["status"], record["amount"]) == ("dispute", "opened", 5000)
        assert payment["disputed_amount"] == 5000
    else:
        assert (record["object"], record["refund_id"], record["amount"]) == ("refund", "re_F1", 5000)
        assert payment["refunded_amount"] == 5000
        assert [e["amount"] for e in commission_entries(paid.client, paid.tenant.live_key)] == [2000, -1000]


def test_a_dispute_status_in_another_currency_than_its_payment_is_refused_and_the_dispute_stays(
    paid: Paid,
) -> None:
    expect(paid.deliver("charge.dispute.created", _dispute(paid)), 200)
    before = paid.ledger()
    lost = _dispute(paid, "eur", status="lost")
    expect(paid.deliver("charge.dispute.closed", lost), 400, "currency_mismatch")
    assert paid.ledger() == before
    (dispute,) = before[2]
    assert dispute["status"] == "opened"


def test_charge_refunded_with_one_refund_in_another_currency_records_none_of_its_refunds(paid: Paid) -> None:
    """All of a charge's refunds are in its currency; an event saying otherwise is refused whole."""
    before = paid.ledger()
    charge = payloads.charge(
        charge_id="ch_F1",
        amount=10000,
        metadata=paid.metadata,
        created=paid.clock.now(),
        livemode=True,
        amount_refunded=3000,
        refunds=[
            _refund(paid, refund_id="re_F1a", amount=1000),
            _refund(paid, "jpy", refund_id="re_F1b", amount=2000),
        ],
    )
    expect(paid.deliver("charge.refunded", charge), 400, "currency_mismatch")
    assert paid.ledger() == before


def test_charge_refunded_naming_one_refund_twice_differently_records_none_of_its_refunds(paid: Paid) -> None:
    """Probe Q: ``re_1`` of 1000 then ``re_1`` of 2000 in one event answered ``409`` after
    recording the first, with its reversal and event; a redelivery could never succeed either."""
    before = paid.ledger()

    def charge_refunding(*refunds: JSON) -> JSON:
        return payloads.charge(
            charge_id="ch_F1",
            amount=10000,
            metadata=paid.metadata,
            created=paid.clock.now(),
            livemode=True,
            amount_refunded=sum(int(refund["amount"]) for refund in refunds),
            refunds=list(refunds),
        )

    twice = charge_refunding(
        _refund(paid, refund_id="re_F1a", amount=1000), _refund(paid, refund_id="re_F1a", amount=2000)
    )
    refused = expect(paid.deliver("charge.refunded", twice), 409, "idempotency_conflict")
    assert "re_F1a" in refused["error"]["message"]
    assert paid.ledger() == before
    # The same refund listed twice alike is one refund, recorded once.
    same = _refund(paid, refund_id="re_F1a", amount=1000)
    expect(paid.deliver("charge.refunded", charge_refunding(same, same)), 200)
    refunds = paid.ledger()[1]
    assert [(refund["refund_id"], refund["amount"]) for refund in refunds] == [("re_F1a", 1000)]


def test_a_replay_of_an_accepted_processor_refund_answers_as_before(paid: Paid) -> None:
    event_type, obj = _refund_event(paid, "usd")
    first = expect(paid.deliver(event_type, obj, event_id="evt_F1"), 200)
    after = paid.ledger()
    assert expect(paid.deliver(event_type, obj, event_id="evt_F1"), 200)["records"] == first["records"]
    assert expect(paid.deliver("refund.updated", obj), 200)["records"] == first["records"]
    assert paid.ledger() == after


def test_a_replay_of_a_dispute_answers_as_before(paid: Paid) -> None:
    first = expect(paid.deliver("charge.dispute.created", _dispute(paid)), 200)
    after = paid.ledger()
    assert expect(paid.deliver("charge.dispute.updated", _dispute(paid)), 200)["records"] == first["records"]
    assert paid.ledger() == after


def test_a_refund_recorded_before_currencies_were_compared_still_answers_its_replay(paid: Paid) -> None:
    """A refund stored without a currency check (as an earlier version did) keeps its answer: the
    replay is answered from the stored refund before the currency is compared, so a delivery the
    processor repeats does not turn into a refusal it retries for days."""
    scope = Scope(app_id=paid.tenant.app_id, mode=Mode.LIVE)
    stored = record_refund(
        paid.runtime,
        scope,
        RefundReport(refund_id="re_F1", payment_id="ch_F1", amount=5000),
        source=RevenueSource.PROCESSOR,
    )
    assert stored.created
    after = paid.ledger()
    (record,) = expect(paid.deliver("refund.created", _refund(paid, "jpy")), 200)["records"]
    assert (record["id"], record["refund_id"]) == (stored.record.id, "re_F1")
    assert paid.ledger() == after


def test_an_api_refund_still_needs_no_currency(store_client: Client, store_runtime: Runtime) -> None:
    """The comparison is the processor's: API refunds and disputes carry no currency (2.7, 2.8)."""
    tenant = new_tenant(store_client, store_runtime, "api")
    who = referred_customer(store_client, tenant, tenant.test_key, "a1")
    payment = {
        "payment_id": "pay_1",
        "customer_id": who["customer_id"],
        "program_id": who["program_id"],
        "amount": 10000,
        "currency": "usd",
    }
    expect(store_client.post("/v1/transactions", tenant.test_key, payment), 201)
    refund = {"refund_id": "rf_1", "payment_id": "pay_1", "amount": 5000}
    expect(store_client.post("/v1/transactions/refunds", tenant.test_key, refund), 201)
    dispute = {"dispute_id": "dp_1", "payment_id": "pay_1", "status": "opened", "amount": 1000}
    expect(store_client.post("/v1/transactions/disputes", tenant.test_key, dispute), 201)


def test_charge_refunded_of_a_charge_reported_in_another_currency_than_its_payment_is_refused(
    paid: Paid,
) -> None:
    """Refunds in their charge's currency are still compared with the payment recorded."""
    before = paid.ledger()
    charge = payloads.charge(
        charge_id="ch_F1",
        amount=10000,
        currency="jpy",
        metadata=paid.metadata,
        created=paid.clock.now(),
        livemode=True,
        amount_refunded=5000,
        refunds=[_refund(paid, "jpy")],
    )
    expect(paid.deliver("charge.refunded", charge), 400, "currency_mismatch")
    assert paid.ledger() == before
