"""Currency must be an ISO 4217 code (interface 2.2), on every store.

A program takes only a code ISO 4217 lists today. A payment's currency must be a listed code
too, and is then checked against its program's (``currency_mismatch``), except that a program
keeps taking payments in its own currency after ISO withdraws it and pycountry drops it.
A code that is neither is ``validation_error`` before any other answer, and changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.models import Program, RevenueSource
from refcore.rules.money import is_iso_4217
from refcore.services import programs, revenue
from refcore.services.revenue import UnattributedPaymentReport
from refcore.services.runtime import Runtime
from tests.contract.scenario import LIVE, World, build_world, unique

#: Withdrawn from ISO 4217 in 2023 (Croatia joined the euro); pycountry no longer lists it.
WITHDRAWN = "hrk"


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def _created_before_withdrawal(world: World, program: Program, currency: str) -> Program:
    """The program as if created in ``currency`` before ISO withdrew it: written directly, since
    the service refuses the code now."""

    def work(tx: Any) -> Program:
        changed = evolve(program, currency=currency)
        tx.uow.programs.replace(changed)
        return changed

    return world.rt.transaction(work)


def _unattributed(world: World, currency: object, payment_id: str | None = None) -> revenue.Recorded:
    report = UnattributedPaymentReport(payment_id=payment_id or unique("ch_"), amount=500, currency=currency)
    return revenue.record_unattributed_payment(
        world.rt, world.scope(LIVE), report, source=RevenueSource.PROCESSOR
    )


def test_withdrawn_code_is_not_listed() -> None:
    assert not is_iso_4217(WITHDRAWN)


@pytest.mark.parametrize("currency", ["usd", "jpy", "eur"])
def test_currency_must_be_an_iso_4217_code_listed_codes_create_a_program(world: World, currency: str) -> None:
    assert world.add_program(currency=currency).currency == currency


@pytest.mark.parametrize("currency", ["zzz", "xyz", WITHDRAWN, "USD", "usd\n", 840, None])
def test_currency_must_be_an_iso_4217_code_to_create_a_program(world: World, currency: object) -> None:
    with world.rejects("validation_error", "currency"):
        world.add_program(currency=currency)


def test_currency_must_be_an_iso_4217_code_and_cannot_be_changed_by_an_update(world: World) -> None:
    for currency in ("zzz", "eur"):
        with world.rejects("validation_error", "currency"):
            programs.update_program(world.rt, world.session, world.program.id, {"currency": currency})
    assert programs.get_program(world.rt, world.session, world.program.id).currency == "usd"


def test_currency_must_be_an_iso_4217_code_a_payment_in_xyz_is_validation_error_not_currency_mismatch(
    world: World,
) -> None:
    customer = world.referred_customer()
    with world.rejects("validation_error", "currency"):
        world.pay(customer, 1_000, currency="xyz")
    # A listed code that is not the program's is still the mismatch it was.
    with world.rejects("currency_mismatch", "currency"):
        world.pay(customer, 1_000, currency="eur")


def test_currency_must_be_an_iso_4217_code_checked_before_the_lookups_answer(world: World) -> None:
    """Like the checks of the form, a code that is not ISO 4217 is answered before a missing
    program, another App's program or a replay with other details."""
    customer = world.referred_customer()
    world.pay(customer, 1_000, payment_id="pay_1")
    other = build_world(world.rt, world.clock)
    foreign = _created_before_withdrawal(other, other.program, "zzz")
    cases: list[dict[str, Any]] = [
        {"program_id": "prg_00000000000000000000000000"},
        {"program_id": foreign.id, "currency": "zzz"},  # another App's currency allows nothing
        {"payment_id": "pay_1"},
    ]
    for case in cases:
        arguments: dict[str, Any] = {"currency": "xyz", **case}
        with world.rejects("validation_error", "currency"):
            world.pay(customer, 1_000, **arguments)


def test_currency_must_be_an_iso_4217_code_unless_it_is_the_programs_own_withdrawn_one(world: World) -> None:
    world.program = _created_before_withdrawal(world, world.program, WITHDRAWN)
    customer = world.referred_customer()

    recorded = world.pay(customer, 10_000, currency=WITHDRAWN, payment_id="pay_hrk")
    assert recorded.created and recorded.record.currency == WITHDRAWN
    assert world.entry_sum(recorded.record.id) == 2_000
    assert not world.pay(customer, 10_000, currency=WITHDRAWN, payment_id="pay_hrk").created
    assert world.refund("pay_hrk", 1_000).created

    # The program's own withdrawn code helps no other program, and other codes are refused as ever.
    usd_program = world.add_program(currency="usd")
    usd_affiliate = world.add_affiliate(program=usd_program)
    usd_customer = world.referred_customer(link=world.add_link(usd_affiliate))
    with world.rejects("validation_error", "currency"):
        world.pay(usd_customer, 1_000, currency=WITHDRAWN)
    with world.rejects("validation_error", "currency"):
        world.pay(customer, 1_000, currency="xyz")
    with world.rejects("currency_mismatch", "currency"):
        world.pay(customer, 1_000, currency="usd")


def test_currency_must_be_an_iso_4217_code_for_an_unattributed_processor_payment(world: World) -> None:
    assert _unattributed(world, "eur").created  # listed, though no program uses it
    for currency in ("xyz", WITHDRAWN):
        with world.rejects("validation_error", "currency"):
            _unattributed(world, currency)
    # The App's program took the withdrawn code earlier: its processor payments keep coming in it.
    world.program = _created_before_withdrawal(world, world.program, WITHDRAWN)
    recorded = _unattributed(world, WITHDRAWN, payment_id="ch_hrk")
    assert recorded.created and recorded.record.currency == WITHDRAWN
    assert not _unattributed(world, WITHDRAWN, payment_id="ch_hrk").created
    with world.rejects("validation_error", "currency"):
        _unattributed(world, "xyz")
