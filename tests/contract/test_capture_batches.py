"""Captures recorded together (``tracking.record_captures``): one unit of work, one answer each.

Decisions 3: a capture with a key records a click of the key's App and mode on a link of that
App; without one a Live click; an unknown ``via`` is ``404 link_not_found``. Recorded together,
each capture keeps exactly the answer it would have had alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, Forbidden, NotFound, Unauthenticated
from refcore.models import Click
from refcore.services import affiliates, tenancy, tracking
from refcore.services.runtime import Runtime
from refcore.services.tracking import (
    CaptureRequest,
    Credential,
    PendingCapture,
    check_capture,
    record_captures,
)
from tests.contract.scenario import LIVE, TEST, World, build_world, rejected


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def pending(world: World, page: str, *, code: str | None = None, keyed: bool = False) -> PendingCapture:
    request = CaptureRequest(via=code or world.link.code, page=page)
    return check_capture(request, caller=world.scope(TEST) if keyed else None)


def stored_clicks(rt: Runtime) -> dict[str, Click]:
    return {click.id: click for click in rt.read(lambda tx: tx.uow.clicks.find_all({}))}


def count_units_of_work(rt: Runtime) -> Callable[[], int]:
    """Wrap the runtime's unit-of-work factory; the returned function tells how many were opened."""
    opened = 0
    factory = rt.unit_of_work

    def counting() -> Any:
        nonlocal opened
        opened += 1
        return factory()

    rt.unit_of_work = counting
    return lambda: opened


def test_decisions_3_captures_recorded_together_each_get_their_own_stored_click(world: World) -> None:
    captures = [pending(world, f"https://app.example.com/p{n}") for n in range(5)]

    outcomes = record_captures(world.rt, captures)

    assert all(isinstance(outcome, Click) for outcome in outcomes)
    clicks = [outcome for outcome in outcomes if isinstance(outcome, Click)]
    assert [click.page for click in clicks] == [capture.page for capture in captures]
    assert len({click.id for click in clicks}) == 5
    assert stored_clicks(world.rt) == {click.id: click for click in clicks}
    for click in clicks:
        assert (click.app_id, click.mode, click.link_id) == (world.app.id, LIVE, world.link.id)
        assert click.program_affiliate_id == world.affiliate.id


def test_decisions_3_captures_recorded_together_share_one_unit_of_work(world: World) -> None:
    opened = count_units_of_work(world.rt)

    record_captures(world.rt, [pending(world, f"https://app.example.com/{n}") for n in range(20)])

    assert opened() == 1
    assert len(stored_clicks(world.rt)) == 20


def test_decisions_3_an_unknown_link_fails_only_its_own_capture(world: World) -> None:
    captures = [
        pending(world, "https://app.example.com/a"),
        pending(world, "https://app.example.com/b", code="no-such-link"),
        pending(world, "https://app.example.com/c"),
    ]

    first, missing, last = record_captures(world.rt, captures)

    assert isinstance(missing, NotFound) and missing.code == "link_not_found"
    assert isinstance(first, Click) and isinstance(last, Click)
    assert set(stored_clicks(world.rt)) == {first.id, last.id}


def test_decisions_3_a_deleted_link_fails_only_its_own_capture(world: World) -> None:
    deleted = world.add_link()
    affiliates.delete_link(world.rt, world.session, world.affiliate.id, deleted.id)

    kept, gone = record_captures(
        world.rt,
        [pending(world, "https://app.example.com/a"), pending(world, "https://x/", code=deleted.code)],
    )

    assert isinstance(kept, Click)
    assert isinstance(gone, NotFound) and gone.code == "link_not_found"
    assert set(stored_clicks(world.rt)) == {kept.id}


def test_decisions_3_a_keyed_capture_of_another_apps_link_fails_alone_beside_public_ones(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    other = build_world(runtime, clock, affiliate_email="other@example.com")
    captures = [
        pending(world, "https://app.example.com/own", keyed=True),
        pending(world, "https://app.example.com/theirs", code=other.link.code, keyed=True),
        pending(other, "https://other.example.com/public"),
    ]

    own, theirs, public = record_captures(world.rt, captures)

    assert isinstance(theirs, NotFound) and theirs.code == "link_not_found"
    assert isinstance(own, Click) and (own.app_id, own.mode) == (world.app.id, TEST)
    assert isinstance(public, Click) and (public.app_id, public.mode) == (other.app.id, LIVE)


def test_decisions_3_the_library_capture_is_a_batch_of_one_and_raises_for_an_unknown_link(
    world: World,
) -> None:
    with rejected(world.rt, "link_not_found"):
        tracking.capture(world.rt, CaptureRequest(via="no-such-link"), scope=None)
    click = tracking.capture(world.rt, CaptureRequest(via=world.link.code.upper()), scope=None)
    assert stored_clicks(world.rt) == {click.id: click}


def keyed_by(world: World, secret: str, page: str) -> PendingCapture:
    """A server capture whose key is not yet authenticated (as the HTTP API hands it over)."""
    return check_capture(CaptureRequest(via=world.link.code, page=page), caller=Credential(secret))


def test_decisions_1_a_server_captures_key_is_authenticated_with_its_batch_and_sets_app_and_mode(
    world: World,
) -> None:
    test_key = tenancy.create_api_key(world.rt, world.session, world.app.id, "app", "test").secret
    live_key = tenancy.create_api_key(world.rt, world.session, world.app.id, "managed_revenue", "live")
    captures = [
        keyed_by(world, test_key, "https://app.example.com/a"),
        keyed_by(world, live_key.secret, "https://app.example.com/b"),
        keyed_by(world, test_key, "https://app.example.com/c"),
    ]

    outcomes = record_captures(world.rt, captures)

    assert all(isinstance(outcome, Click) for outcome in outcomes)
    assert [(c.app_id, c.mode, c.page) for c in outcomes if isinstance(c, Click)] == [
        (world.app.id, TEST, "https://app.example.com/a"),
        (world.app.id, LIVE, "https://app.example.com/b"),
        (world.app.id, TEST, "https://app.example.com/c"),
    ]
    assert set(stored_clicks(world.rt)) == {c.id for c in outcomes if isinstance(c, Click)}


def test_decisions_1_an_unknown_or_revoked_key_fails_its_own_captures_only(world: World) -> None:
    revoked = tenancy.create_api_key(world.rt, world.session, world.app.id, "app", "live")
    tenancy.revoke_api_key(world.rt, world.session, revoked.key.id)
    captures = [
        keyed_by(world, "key_app_forged", "https://app.example.com/forged"),
        pending(world, "https://app.example.com/public"),
        keyed_by(world, revoked.secret, "https://app.example.com/revoked"),
        keyed_by(world, "key_app_forged", "https://app.example.com/forged-again"),
    ]

    forged, public, gone, forged_again = record_captures(world.rt, captures)

    for outcome in (forged, gone, forged_again):
        assert isinstance(outcome, Unauthenticated) and outcome.code == "unauthenticated"
    assert forged is not forged_again  # each capture raises an error of its own
    assert isinstance(public, Click)
    assert set(stored_clicks(world.rt)) == {public.id}


def test_decisions_1_a_credential_that_is_not_an_app_key_may_not_capture(world: World) -> None:
    _user, session_token = tenancy.create_session(world.rt, "someone@example.com")
    affiliate_key = world.rt.transaction(
        lambda tx: tenancy.issue_affiliate_key(tx, world.app.id, world.affiliate.id)
    ).secret

    outcomes = record_captures(
        world.rt,
        [
            keyed_by(world, session_token, "https://app.example.com/session"),
            keyed_by(world, affiliate_key, "https://app.example.com/affiliate"),
        ],
    )

    assert all(isinstance(outcome, Forbidden) and outcome.code == "forbidden" for outcome in outcomes)
    assert stored_clicks(world.rt) == {}


def test_decisions_1_a_server_captures_credential_never_shows_in_a_repr(world: World) -> None:
    capture = keyed_by(world, "key_app_very_secret_value", "https://app.example.com/")
    assert "very_secret" not in repr(capture)
    assert "very_secret" not in repr(capture.caller)


def test_decisions_3_an_empty_batch_records_nothing(world: World) -> None:
    assert record_captures(world.rt, []) == []
    assert stored_clicks(world.rt) == {}


# -- the repository port's add_all ---------------------------------------------------------------


def test_repository_add_all_stages_every_record_in_the_unit_of_work(world: World) -> None:
    captured = [world.capture() for _ in range(3)]
    originals = [stored_clicks(world.rt)[id] for id in captured]

    world.rt.transaction(
        lambda tx: tx.uow.clicks.add_all([evolve(click, id=tx.new_id("clk")) for click in originals])
    )

    stored = stored_clicks(world.rt)
    assert len(stored) == 6
    assert sorted(click.page or "" for click in stored.values()) == ["https://app.example.com/pricing"] * 6


def test_repository_add_all_with_a_taken_id_is_a_concurrent_write_and_keeps_nothing(world: World) -> None:
    captured = world.capture()
    existing = stored_clicks(world.rt)[captured]

    with pytest.raises(ConcurrentWrite), world.rt.unit_of_work() as uow:
        uow.clicks.add_all([evolve(existing, id=world.rt.ids.new("clk")), existing])
        uow.commit()

    assert list(stored_clicks(world.rt)) == [existing.id]
