"""Currency must be an ISO 4217 code for processor payments too: they are recorded by the same
services as API payments, so a charge in a code ISO 4217 does not list is refused (``400
validation_error``; the processor delivers it again later), attributed or not."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from tests.http.world import JSON, Client, Tenant, expect
from tests.processor import payloads
from tests.processor.world import Installation, deliver, referred_customer


@pytest.mark.parametrize("attributed", [True, False], ids=["attributed", "unattributed"])
def test_currency_must_be_an_iso_4217_code_for_a_processor_charge(
    client: Client, clock: ManualClock, acme: Tenant, installation: Installation, attributed: bool
) -> None:
    who: JSON = referred_customer(client, acme, acme.test_key, "m")
    metadata = who["processor_metadata"] if attributed else None
    charge = payloads.charge(
        charge_id="ch_xyz", amount=100, currency="xyz", metadata=metadata, created=clock.now()
    )
    response = deliver(client, installation, "charge.succeeded", charge, at=clock.now())
    assert expect(response, 400, "validation_error")["error"]["param"] == "currency"
    assert expect(client.get("/v1/transactions", acme.test_key), 200)["data"] == []
