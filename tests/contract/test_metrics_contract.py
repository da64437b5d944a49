"""The aggregate-read port (``refcore.ports.metrics``) answers the same on every store.

Counts, sums and earliest times, with equality filters (enums and ``None`` included) and a
half-open time range, over records built through the services.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.errors import InternalError
from refcore.models import Click, EntryKind, Mode
from refcore.ports.metrics import Period
from refcore.services import affiliates
from refcore.services.runtime import Runtime, Tx
from tests.contract.scenario import LIVE, TEST, World, build_world

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def _count(world: World, repository: str, where: dict[str, object], within: Period | None = None) -> int:
    return world.rt.read(lambda tx: tx.uow.metrics().count(repository, where, within=within))


def _sum(
    world: World, repository: str, field: str, where: dict[str, object], within: Period | None = None
) -> int:
    return world.rt.read(lambda tx: tx.uow.metrics().sum(repository, field, where, within=within))


def _earliest(world: World, repository: str, where: dict[str, object]) -> datetime | None:
    return world.rt.read(lambda tx: tx.uow.metrics().earliest(repository, where))


def _activity(world: World) -> None:
    """Live: 2 clicks at T0, 1 at T0 + 1 h; a payment of 1000 at T0 and 3000 at T0 + 2 h. Test: 1 click."""
    world.clock.set(T0)
    world.capture()
    first = world.referred_customer()
    world.pay(first, 1000)
    world.clock.set(T0 + timedelta(hours=1))
    world.capture()
    world.capture(TEST)
    world.clock.set(T0 + timedelta(hours=2))
    world.pay(first, 3000)


def test_counts_filter_by_equality_and_by_a_half_open_period(world: World) -> None:
    _activity(world)
    live = {"app_id": world.app.id, "mode": LIVE}
    assert _count(world, "clicks", live) == 3
    assert _count(world, "clicks", {"app_id": world.app.id, "mode": TEST}) == 1
    assert _count(world, "clicks", live, Period(start=T0, end=T0 + timedelta(hours=1))) == 2
    assert _count(world, "clicks", live, Period(start=T0 + timedelta(hours=1))) == 1
    assert _count(world, "clicks", live, Period(end=T0)) == 0
    assert _count(world, "clicks", {"app_id": "app_other", "mode": LIVE}) == 0


def test_sums_add_integers_and_are_zero_for_nothing(world: World) -> None:
    _activity(world)
    live = {"app_id": world.app.id, "mode": LIVE}
    assert _sum(world, "payments", "amount", live) == 4000
    assert (
        _sum(world, "payments", "amount", {**live, "attributed": True}, Period(start=T0 + timedelta(hours=1)))
        == 3000
    )
    assert _sum(world, "payments", "amount", {**live, "attributed": False}) == 0
    # Commission at 20 %: 200 + 600, earned entries only (an enum filter).
    assert _sum(world, "commission_entries", "amount", {**live, "kind": EntryKind.EARNED}) == 800
    assert _sum(world, "commission_entries", "amount", {**live, "kind": EntryKind.REVERSAL}) == 0


def test_sums_keep_negative_amounts(world: World) -> None:
    _activity(world)
    payment = world.pay(world.referred_customer(), 10000).record
    world.refund(payment.payment_id, 2500)
    live = {"app_id": world.app.id, "mode": LIVE}
    assert _sum(world, "commission_entries", "amount", {**live, "kind": EntryKind.REVERSAL}) == -500


def test_earliest_is_the_oldest_time_in_utc_or_none(world: World) -> None:
    live = {"app_id": world.app.id, "mode": LIVE}
    assert _earliest(world, "clicks", live) is None
    _activity(world)
    first = _earliest(world, "clicks", live)
    assert first == T0 and first is not None and first.utcoffset() == timedelta(0)
    assert _earliest(world, "clicks", {"app_id": world.app.id, "mode": TEST}) == T0 + timedelta(hours=1)
    assert _earliest(world, "payments", {**live, "attributed": True}) == T0


def test_a_none_filter_matches_missing_values(world: World) -> None:
    world.add_link()
    deleted = world.add_link()
    affiliates.delete_link(world.rt, world.session, world.affiliate.id, deleted.id)
    where: dict[str, object] = {"program_affiliate_id": world.affiliate.id}
    assert _count(world, "links", where) == 3  # the world's own link and the two added
    assert _count(world, "links", {**where, "deleted_at": None}) == 2


def test_metrics_see_the_unit_of_works_own_writes(world: World) -> None:
    _activity(world)
    live = {"app_id": world.app.id, "mode": Mode.LIVE}

    with world.rt.unit_of_work() as uow:
        before = uow.metrics().count("clicks", live)
        uow.clicks.add(_click(world, world.rt.ids.new("clk")))
        assert (before, uow.metrics().count("clicks", live)) == (3, 4)
    assert _count(world, "clicks", live) == 3  # never committed


def test_runtime_read_never_keeps_a_write(world: World) -> None:
    """``Runtime.read`` is for reads: a write inside it is refused (PostgreSQL's read
    repository) or discarded (the other stores), never kept."""
    _activity(world)
    live = {"app_id": world.app.id, "mode": Mode.LIVE}
    clicks_before = _count(world, "clicks", live)

    def write(tx: Tx) -> None:
        tx.uow.clicks.add(_click(world, tx.new_id("clk")))

    with contextlib.suppress(InternalError):
        world.rt.read(write)
    assert _count(world, "clicks", live) == clicks_before


def _click(world: World, id: str) -> Click:
    return Click(
        id=id,
        app_id=world.app.id,
        mode=Mode.LIVE,
        program_id=world.program.id,
        program_affiliate_id=world.affiliate.id,
        link_id=world.link.id,
        created_at=world.clock.now(),
    )
