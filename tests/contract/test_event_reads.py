"""Events read back by ID and listed (decisions 11: every resource with an ID answers ``GET``),
in every store.

Modes are the delivery history's: an App key reads its own mode's events (the other mode's by ID
is ``409 mode_mismatch``), a session either mode's by ID and the mode it names in a list;
``webhook.test`` belongs to both. Another tenant's event is ``event_not_found``, as if it did not
exist. A list is cut into pages by the store's query for that mode (and type), so a page of
``limit`` holds that many of the list's events and ``has_more`` counts only them.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.models import Event, EventType, Mode
from refcore.services import events
from refcore.services.events import EventQuery
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from tests.contract.scenario import INTERLEAVED_EVENTS, LIVE, TEST, World, build_world


def _emit(world: World, event_type: EventType, livemode: bool) -> Event:
    def work(tx: Tx) -> Event:
        return tx.emit(event_type, app_id=world.app.id, livemode=livemode, data={"id": "x"})

    world.clock.advance(timedelta(seconds=1))
    return world.rt.transaction(work)


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


@pytest.fixture
def written(world: World) -> list[Event]:
    return [_emit(world, event_type, livemode) for event_type, livemode in INTERLEAVED_EVENTS]


def _expected(world: World, mode: Mode, type: EventType | None = None) -> list[str]:
    """The IDs ``mode``'s list shows, newest first, from every event of the App (the set-up's too):
    its own mode's and the test pings."""
    return sorted(
        (
            e.id
            for e in world.events(type)
            if e.app_id == world.app.id and (e.livemode is (mode is LIVE) or e.type is EventType.WEBHOOK_TEST)
        ),
        reverse=True,
    )


def _all_pages(world: World, who: Principal, **asked: str) -> tuple[list[str], list[int]]:
    """Every page of two ``who`` reads, following the cursors: the IDs and each page's size."""
    ids: list[str] = []
    sizes: list[int] = []
    cursor: str | None = None
    while True:
        page = events.list_events(world.rt, who, EventQuery(limit=2, starting_after=cursor, **asked))
        ids += [e.id for e in page.data]
        sizes.append(len(page.data))
        if not page.has_more:
            return ids, sizes
        cursor = page.data[-1].id


# -- by ID -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [TEST, LIVE])
def test_a_key_reads_its_own_modes_event_as_stored(world: World, written: list[Event], mode: Mode) -> None:
    own = next(e for e in written if e.livemode is (mode is LIVE))
    assert events.get_event(world.rt, world.key(mode), own.id) == own


@pytest.mark.parametrize("mode", [TEST, LIVE])
def test_a_key_reading_the_other_modes_event_is_a_mode_mismatch(
    world: World, written: list[Event], mode: Mode
) -> None:
    other = next(
        e for e in written if e.livemode is not (mode is LIVE) and e.type is not EventType.WEBHOOK_TEST
    )
    with world.rejects("mode_mismatch", "id"):
        events.get_event(world.rt, world.key(mode), other.id)


@pytest.mark.parametrize("mode", [TEST, LIVE])
def test_either_modes_key_reads_a_test_ping(world: World, written: list[Event], mode: Mode) -> None:
    ping = next(e for e in written if e.type is EventType.WEBHOOK_TEST)
    assert events.get_event(world.rt, world.key(mode), ping.id) == ping


def test_a_session_reads_either_modes_event(world: World, written: list[Event]) -> None:
    for event in written:
        assert events.get_event(world.rt, world.session, event.id) == event


def test_another_tenants_event_is_not_found_for_its_keys_and_sessions(
    runtime: Runtime, clock: ManualClock, world: World, written: list[Event]
) -> None:
    other = build_world(runtime, clock)
    for who in (other.key(LIVE), other.key(TEST), other.session):
        for event in (written[0], written[1]):
            with world.rejects("event_not_found"):
                events.get_event(world.rt, who, event.id)


@pytest.mark.parametrize("event_id", ["whev_nope", "whdl_nope", "x"])
def test_an_unknown_id_is_not_found(world: World, event_id: str) -> None:
    with world.rejects("event_not_found"):
        events.get_event(world.rt, world.session, event_id)


# -- lists -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [TEST, LIVE])
def test_a_key_pages_through_its_own_modes_events_only(
    world: World, written: list[Event], mode: Mode
) -> None:
    ids, sizes = _all_pages(world, world.key(mode))
    assert ids == _expected(world, mode)
    # Full pages of the list's events, the last one short or full, never an empty page after a
    # has_more: true.
    assert all(size == 2 for size in sizes[:-1]) and 1 <= sizes[-1] <= 2


@pytest.mark.parametrize("mode", [TEST, LIVE])
def test_a_session_pages_through_the_mode_it_names(world: World, written: list[Event], mode: Mode) -> None:
    ids, _ = _all_pages(world, world.session, app_id=world.app.id, environment=mode.value)
    assert ids == _expected(world, mode)


def test_a_session_naming_no_mode_lists_live(world: World, written: list[Event]) -> None:
    page = events.list_events(world.rt, world.session, EventQuery(app_id=world.app.id, limit=100))
    assert [e.id for e in page.data] == _expected(world, LIVE)


@pytest.mark.parametrize("mode", [TEST, LIVE])
@pytest.mark.parametrize("type", [EventType.COMMISSION_CREATED, EventType.WEBHOOK_TEST])
def test_a_type_filter_keeps_that_type_of_the_mode(
    world: World, written: list[Event], mode: Mode, type: EventType
) -> None:
    ids, _ = _all_pages(world, world.key(mode), type=type.value)
    assert ids == _expected(world, mode, type)
    assert ids


def test_a_list_never_mixes_tenants(
    runtime: Runtime, clock: ManualClock, world: World, written: list[Event]
) -> None:
    other = build_world(runtime, clock)
    page = events.list_events(other.rt, other.key(LIVE), EventQuery(limit=100))
    assert {e.app_id for e in page.data} == {other.app.id}


def test_a_cursor_from_the_other_modes_list_is_refused(world: World, written: list[Event]) -> None:
    live_only = written[0]
    with world.rejects("invalid_starting_after", "starting_after"):
        events.list_events(world.rt, world.key(TEST), EventQuery(starting_after=live_only.id))


def test_a_cursor_of_another_type_is_refused_under_a_type_filter(world: World, written: list[Event]) -> None:
    transaction = written[0]
    with world.rejects("invalid_starting_after", "starting_after"):
        events.list_events(
            world.rt, world.key(LIVE), EventQuery(type="commission.created", starting_after=transaction.id)
        )


def test_an_unknown_type_is_a_validation_error(world: World) -> None:
    with world.rejects("validation_error", "type"):
        events.list_events(world.rt, world.key(LIVE), EventQuery(type="payment.created"))


def test_a_session_must_name_the_app(world: World) -> None:
    with world.rejects("validation_error", "app_id"):
        events.list_events(world.rt, world.session, EventQuery())


def test_a_key_naming_the_other_mode_is_a_mode_mismatch(world: World) -> None:
    with world.rejects("mode_mismatch", "environment"):
        events.list_events(world.rt, world.key(TEST), EventQuery(environment="live"))


def test_a_key_naming_another_app_is_not_found(runtime: Runtime, clock: ManualClock, world: World) -> None:
    other = build_world(runtime, clock)
    with world.rejects("app_not_found"):
        events.list_events(world.rt, world.key(LIVE), EventQuery(app_id=other.app.id))
