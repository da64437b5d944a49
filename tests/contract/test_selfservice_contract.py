"""Hosted signups, rate limits, the App profile, setup status and overview on every store.

The HTTP behaviour is tested in ``tests/selfservice`` on the memory store; these tests make sure
the tables behind it (signups, counters, agreement versions, logo bytes) and the aggregate
indexes behave the same on SQLite and PostgreSQL, including under concurrent requests.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from refcore.clocks import ManualClock
from refcore.errors import InvalidStartingAfter, RateLimited, RefcoreError, ValidationError
from refcore.models import AffiliateStatus, Mode
from refcore.ports.mailer import Message
from refcore.services import app_profile, join, overview, programs, setup_status
from refcore.services.join import JoinPolicy
from refcore.services.runtime import Runtime
from tests.contract.scenario import World, build_world
from tests.selfservice.images import png, webp


class ListMailer:
    def __init__(self) -> None:
        self.sent: list[Message] = []
        self._lock = threading.Lock()

    def send(self, message: Message) -> None:
        with self._lock:
            self.sent.append(message)

    def token_for(self, address: str) -> str:
        message = [m for m in self.sent if m.to == address][-1]
        link = next(word for word in message.text.split() if word.startswith("http"))
        return parse_qs(urlsplit(link).query)["token"][0]


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def test_a_signup_is_confirmed_once_into_a_pending_affiliate_with_a_key(world: World) -> None:
    mailer = ListMailer()
    join.start_signup(world.rt, mailer, world.program.slug, "new@x.example", "New", client_ip="192.0.2.1")
    token = mailer.token_for("new@x.example")
    joined = join.confirm_signup(world.rt, world.program.slug, token)
    assert joined.affiliate.status is AffiliateStatus.PENDING
    assert (
        joined.key.secret.startswith("key_aff_")
        and joined.key.key.program_affiliate_id == joined.affiliate.id
    )
    with pytest.raises(RefcoreError) as reused:
        join.confirm_signup(world.rt, world.program.slug, token)
    assert reused.value.code == "invalid_signup_token"


def test_an_expired_token_is_refused(world: World) -> None:
    mailer = ListMailer()
    join.start_signup(world.rt, mailer, world.program.slug, "late@x.example", "Late", client_ip=None)
    world.clock.advance(timedelta(days=1))
    with pytest.raises(RefcoreError) as expired:
        join.confirm_signup(world.rt, world.program.slug, mailer.token_for("late@x.example"))
    assert expired.value.code == "invalid_signup_token"


def test_concurrent_signups_never_exceed_the_limit(world: World) -> None:
    """Twelve requests at once for one address, limit five: exactly five get through."""
    mailer = ListMailer()
    policy = JoinPolicy(per_email=5, per_ip=1000)
    barrier = threading.Barrier(12)

    def attempt(n: int) -> str:
        barrier.wait()
        try:
            join.start_signup(
                world.rt,
                mailer,
                world.program.slug,
                "burst@x.example",
                "B",
                client_ip=f"192.0.2.{n}",
                policy=policy,
            )
        except RateLimited:
            return "limited"
        return "accepted"

    with ThreadPoolExecutor(max_workers=12) as pool:
        outcomes = list(pool.map(attempt, range(12)))
    assert outcomes.count("accepted") == 5 and outcomes.count("limited") == 7
    assert len(mailer.sent) == 5
    signups = world.rt.read(lambda tx: tx.uow.pending_signups.find_all({"email": "burst@x.example"}))
    assert len(signups) == 5


def test_the_limit_resets_in_the_next_window(world: World) -> None:
    mailer = ListMailer()
    policy = JoinPolicy(per_email=1)
    join.start_signup(world.rt, mailer, world.program.slug, "w@x.example", "W", client_ip=None, policy=policy)
    with pytest.raises(RateLimited):
        join.start_signup(
            world.rt, mailer, world.program.slug, "w@x.example", "W", client_ip=None, policy=policy
        )
    world.clock.advance(timedelta(hours=1))
    join.start_signup(world.rt, mailer, world.program.slug, "w@x.example", "W", client_ip=None, policy=policy)
    assert len(mailer.sent) == 2


def test_agreement_versions_and_logo_bytes_round_trip(world: World) -> None:
    app_id = world.app.id
    app_profile.publish_agreement(world.rt, world.session, app_id, "One")
    world.clock.advance(timedelta(seconds=1))
    app_profile.publish_agreement(world.rt, world.session, app_id, "Two")
    history = app_profile.agreement_history(world.rt, world.session, app_id)
    assert [v.text for v in history.page.data] == ["Two", "One"]
    assert history.current is not None and history.current.text == "Two"
    image = png(3, 2)
    app_profile.upload_logo(world.rt, world.session, app_id, image)
    assert app_profile.public_logo(world.rt, app_id).data == image
    app_profile.upload_logo(world.rt, world.session, app_id, webp())
    logo = app_profile.public_logo(world.rt, app_id)
    assert (logo.data, logo.content_type, logo.size) == (webp(), "image/webp", len(webp()))
    page = join.join_page(world.rt, world.program.slug)
    assert page.agreement is not None and page.agreement.text == "Two"
    assert page.logo is not None and page.logo.data == webp()
    app_profile.remove_logo(world.rt, world.session, app_id)
    assert join.join_page(world.rt, world.program.slug).logo is None


def test_setup_status_and_overview_count_the_same_on_every_store(world: World) -> None:
    """One attributed customer paying 10000 (20 %: 2000), one self-referral paying 4000 (0)."""
    start = world.clock.now()
    good = world.referred_customer()
    own = world.referred_customer(email=world.affiliate.email)
    world.pay(good, 10000)
    world.pay(own, 4000)
    world.capture()
    status = setup_status.setup_status(world.rt, world.session, world.app.id)
    assert status.live is not None and status.test is not None
    assert status.live.unattributed_payments == 1
    assert [a.code for a in status.live.alarms] == ["unattributed_payments"]
    assert status.live.first_click_at == start and status.live.first_attributed_payment_at == start
    assert status.live.complete and not status.test.complete
    figures = overview.overview(world.rt, world.session, world.app.id, environment="live")
    assert (figures.clicks, figures.referrals, figures.attributed_customers) == (3, 2, 1)
    (usd,) = figures.currencies
    assert (usd.revenue, usd.attributed_revenue, usd.commissions_earned) == (14000, 10000, 2000)
    test_figures = overview.overview(world.rt, world.session, world.app.id, environment="test")
    assert (test_figures.mode, test_figures.clicks) == (Mode.TEST, 0)


@pytest.mark.parametrize("text", ["terms", "agreement"])
def test_decisions_9_a_published_texts_history_is_paged_newest_first_and_the_current_is_the_newest(
    world: World, text: str
) -> None:
    """Program terms and an App's agreement keep every version (up to 100,000 characters each),
    and their history had been answered whole on every read and every publish. It is paged like
    every list (decisions 9); ``current`` is the newest on every page."""
    other_program = world.add_program(name="Other")

    def publish(body: str) -> str:
        world.clock.advance(timedelta(seconds=1))
        if text == "terms":
            return programs.publish_terms(world.rt, world.session, world.program.id, body).id
        return app_profile.publish_agreement(world.rt, world.session, world.app.id, body).id

    def history(**page: Any) -> Any:
        if text == "terms":
            return programs.list_terms(world.rt, world.session, world.program.id, **page)
        return app_profile.agreement_history(world.rt, world.session, world.app.id, **page)

    assert (history().current, history().page.data, history().page.has_more) == (None, [], False)
    published = [publish(f"v{n}") for n in range(27)]
    newest_first = list(reversed(published))
    first = history()
    assert [v.id for v in first.page.data] == newest_first[:25] and first.page.has_more
    assert first.current is not None and first.current.id == newest_first[0]
    rest = history(starting_after=newest_first[24])
    assert [v.id for v in rest.page.data] == newest_first[25:] and not rest.page.has_more
    assert rest.current is not None and rest.current.id == newest_first[0]
    assert [v.id for v in history(limit=2).page.data] == newest_first[:2]
    for limit in (0, 101, True, "5"):
        with pytest.raises(ValidationError):
            history(limit=limit)
    foreign = programs.publish_terms(world.rt, world.session, other_program.id, "elsewhere").id
    for cursor in (foreign, world.program.id, "agr_missing"):
        with pytest.raises(InvalidStartingAfter):
            history(starting_after=cursor)
