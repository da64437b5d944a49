"""Decisions 9 through the commission list: newest first, ``limit`` 1..100, scoped cursors."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from tests.contract.scenario import TEST, World, build_world


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    world = build_world(runtime, clock)
    for _ in range(5):
        world.pay(world.referred_customer(), 1_000)
    return world


def ids(world: World) -> list[str]:
    """Every live entry ID, newest first."""
    return [e.id for e in reversed(world.entries()) if e.mode.value == "live" and e.app_id == world.app.id]


@pytest.mark.parametrize("limit", [0, 101, -1, True, "10", 2.0])
def test_decisions_9_limit_outside_1_to_100_is_validation_error(world: World, limit: object) -> None:
    with world.rejects("validation_error", "limit"):
        world.commissions(limit=limit)


@pytest.mark.parametrize("limit", [1, 100])
def test_decisions_9_limit_bounds_are_accepted(world: World, limit: int) -> None:
    assert len(world.commissions(limit=limit).data) == min(limit, 5)


def test_decisions_9_default_limit_is_25(runtime: Runtime, clock: ManualClock) -> None:
    world = build_world(runtime, clock)
    customer = world.referred_customer()
    for _ in range(26):
        world.pay(customer, 1_000)
    page = world.commissions()
    assert len(page.data) == 25 and page.has_more


def test_decisions_9_pages_are_newest_first_with_has_more(world: World) -> None:
    seen: list[str] = []
    cursor = None
    pages = []
    while True:
        page = world.commissions(limit=2, starting_after=cursor)
        pages.append((len(page.data), page.has_more))
        seen += [e["id"] for e in page.data]
        if not page.has_more:
            break
        cursor = page.data[-1]["id"]
    assert pages == [(2, True), (2, True), (1, False)]
    assert seen == ids(world)


def test_decisions_9_exact_last_page_has_no_more(world: World) -> None:
    page = world.commissions(limit=5)
    assert len(page.data) == 5 and not page.has_more


def test_decisions_9_cursor_of_the_other_mode_is_invalid_starting_after(world: World) -> None:
    world.pay(world.referred_customer(TEST), 1_000, mode=TEST)
    test_cursor = world.commissions(TEST).data[0]["id"]
    live_cursor = world.commissions().data[0]["id"]
    with world.rejects("invalid_starting_after", "starting_after"):
        world.commissions(starting_after=test_cursor)
    with world.rejects("invalid_starting_after", "starting_after"):
        world.commissions(TEST, starting_after=live_cursor)


def test_decisions_9_cursor_outside_the_filter_is_invalid_starting_after(world: World) -> None:
    other = world.add_affiliate()
    world.pay(world.referred_customer(link=world.add_link(other)), 1_000)
    foreign_cursor = world.commissions(program_affiliate_id=other.id).data[0]["id"]
    own = world.commissions(program_affiliate_id=world.affiliate.id, limit=1)
    # The same cursor is fine in the unfiltered list, and in its own filter.
    assert world.commissions(starting_after=foreign_cursor).data
    assert world.commissions(program_affiliate_id=world.affiliate.id, starting_after=own.data[0]["id"]).data
    with world.rejects("invalid_starting_after"):
        world.commissions(program_affiliate_id=world.affiliate.id, starting_after=foreign_cursor)


def test_decisions_9_cursor_of_another_resource_type_is_invalid_starting_after(world: World) -> None:
    entry = world.entries()[0]
    with world.rejects("invalid_starting_after"):
        world.commissions(starting_after=entry.transaction_id)
    with world.rejects("invalid_starting_after"):
        world.commissions(starting_after="com_01unknown")
    with world.rejects("invalid_starting_after"):
        world.commissions(starting_after="nonsense")


def test_decisions_9_cursor_of_another_app_is_invalid_starting_after(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    stranger = build_world(runtime, clock)
    stranger.pay(stranger.referred_customer(), 1_000)
    with world.rejects("invalid_starting_after"):
        world.commissions(starting_after=stranger.commissions().data[0]["id"])


def test_decisions_9_app_and_mode_scope_the_list(world: World, runtime: Runtime, clock: ManualClock) -> None:
    stranger = build_world(runtime, clock)
    stranger.pay(stranger.referred_customer(), 1_000)
    world.pay(world.referred_customer(TEST), 1_000, mode=TEST)
    assert [e["id"] for e in world.commissions(limit=100).data] == ids(world)
    assert len(world.commissions(TEST).data) == 1
    assert {e["livemode"] for e in world.commissions(limit=100).data} == {True}


@pytest.mark.parametrize(
    ("filters", "param"),
    [({"affiliate_id": "aff_x"}, "affiliate_id"), ({"program_affiliate_id": 5}, "program_affiliate_id")],
)
def test_decisions_9_a_filter_the_library_does_not_know_is_a_validation_error(
    world: World, filters: dict[str, object], param: str
) -> None:
    """``list_commissions`` had dropped a filter it did not know: a misspelt ``affiliate_id``
    listed every affiliate's entries to a library caller who meant one."""
    with world.rejects("validation_error", param):
        world.commissions(**filters)  # type: ignore[arg-type]
