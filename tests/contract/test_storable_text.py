"""Text no store can keep is a ``validation_error`` for a library caller too, on every store.

The HTTP layer refuses a NUL character or an unpaired surrogate where it reads a body; a Python
caller had got them stored (memory store, SQLite's NUL), a bare ``UnicodeEncodeError`` (SQLite,
a surrogate) or an ``internal_error`` (PostgreSQL, a NUL)."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.services import tenancy
from refcore.services.runtime import Runtime
from tests.contract.scenario import World, build_world


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


@pytest.mark.parametrize("bad", ["pay\x00a", "pay\ud800a"], ids=["nul", "surrogate"])
def test_a_payment_id_no_store_can_keep_is_a_validation_error(world: World, bad: str) -> None:
    customer = world.referred_customer()
    with world.rejects("validation_error", "payment_id"):
        world.pay(customer, 1_000, payment_id=bad)
    assert world.rt.read(lambda tx: tx.uow.payments.find_all({})) == []


@pytest.mark.parametrize("bad", ["Acme\x00", "Acme \udfff"], ids=["nul", "surrogate"])
def test_an_organization_name_no_store_can_keep_is_a_validation_error(world: World, bad: str) -> None:
    with world.rejects("validation_error", "name"):
        tenancy.create_organization(world.rt, world.session, bad)
