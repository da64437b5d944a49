"""The webhook delivery history of one mode, cut into pages by the store (decisions 1, 9; probe J).

A Test key had listed the deliveries of Live events. Each store must now answer a mode's history
from its query, not by dropping the other mode's records from a page: a page of ``limit`` holds
that many of the mode's records, and ``has_more`` says whether that mode has more.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.models import DeliveryStatus, EventType, Mode, WebhookDelivery
from refcore.services import webhooks
from refcore.services.pagination import Page
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from tests.contract.scenario import INTERLEAVED_EVENTS, LIVE, TEST, World, build_world


def _deliver(world: World, event_type: EventType, livemode: bool) -> WebhookDelivery:
    """A delivery record of one event, as the dispatcher writes it."""

    def work(tx: Tx) -> WebhookDelivery:
        event = tx.emit(event_type, app_id=world.app.id, livemode=livemode, data={"id": "x"})
        delivery = WebhookDelivery(
            id=tx.new_id(webhooks.DELIVERY_PREFIX),
            app_id=world.app.id,
            event_id=event.id,
            event_type=event.type.value,
            status=DeliveryStatus.SUCCEEDED,
            duration_ms=5,
            created_at=tx.now,
            url="https://hooks.example.com/in",
            listed_in_test=webhooks.listed_in(event, Mode.TEST),
            listed_in_live=webhooks.listed_in(event, Mode.LIVE),
            http_status=200,
        )
        tx.uow.webhook_deliveries.add(delivery)
        return delivery

    world.clock.advance(timedelta(seconds=1))
    return world.rt.transaction(work)


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


@pytest.fixture
def sent(world: World) -> list[WebhookDelivery]:
    return [_deliver(world, event_type, livemode) for event_type, livemode in INTERLEAVED_EVENTS]


def _expected(sent: list[WebhookDelivery], mode: Mode) -> list[str]:
    """The IDs ``mode``'s history lists, newest first: its events' and the test ping's."""
    return [
        d.id
        for d, (event_type, livemode) in reversed(list(zip(sent, INTERLEAVED_EVENTS, strict=True)))
        if livemode is (mode is LIVE) or event_type is EventType.WEBHOOK_TEST
    ]


def _pages(world: World, who: Principal, environment: str | None = None) -> list[Page[WebhookDelivery]]:
    """Every page of two of the history ``who`` reads, following the cursors."""
    pages: list[Page[WebhookDelivery]] = []
    cursor: str | None = None
    while True:
        page = webhooks.list_deliveries(
            world.rt, who, world.app.id, environment=environment, limit=2, starting_after=cursor
        )
        pages.append(page)
        if not page.has_more:
            return pages
        cursor = page.data[-1].id


@pytest.mark.parametrize("mode", [TEST, LIVE])
def test_a_key_pages_through_its_own_modes_deliveries_only(
    world: World, sent: list[WebhookDelivery], mode: Mode
) -> None:
    pages = _pages(world, world.key(mode))
    assert [d.id for page in pages for d in page.data] == _expected(sent, mode)
    # Full pages of the mode's records, and has_more false exactly on the last one.
    assert [len(page.data) for page in pages] == [2, 2]
    assert [page.has_more for page in pages] == [True, False]


@pytest.mark.parametrize("mode", [TEST, LIVE])
def test_a_session_pages_through_the_mode_it_names(
    world: World, sent: list[WebhookDelivery], mode: Mode
) -> None:
    pages = _pages(world, world.session, mode.value)
    assert [d.id for page in pages for d in page.data] == _expected(sent, mode)


def test_a_session_naming_no_mode_reads_the_live_history(world: World, sent: list[WebhookDelivery]) -> None:
    page = webhooks.list_deliveries(world.rt, world.session, world.app.id)
    assert [d.id for d in page.data] == _expected(sent, LIVE)


def test_a_cursor_from_the_other_modes_history_is_refused(world: World, sent: list[WebhookDelivery]) -> None:
    live_only = sent[0]
    with world.rejects("invalid_starting_after", "starting_after"):
        webhooks.list_deliveries(world.rt, world.key(TEST), world.app.id, starting_after=live_only.id)


def test_a_key_naming_the_other_mode_is_a_mode_mismatch(world: World) -> None:
    with world.rejects("mode_mismatch", "environment"):
        webhooks.list_deliveries(world.rt, world.key(TEST), world.app.id, environment="live")


def test_a_delivery_record_shows_its_events_livemode(world: World, sent: list[WebhookDelivery]) -> None:
    """Every object of one mode carries ``livemode`` (probe N: a delivery record did not say which
    history it belongs to). A ``webhook.test`` delivery, listed in both, is its event's ``false``."""
    shown = [webhooks.represent_delivery(d)["livemode"] for d in sent]
    assert shown == [livemode for _type, livemode in INTERLEAVED_EVENTS]
    events = {e.id: e for e in world.events()}
    assert all(events[d.event_id].livemode is webhooks.represent_delivery(d)["livemode"] for d in sent)
