"""Identify: interface 2.5 rules 1-3 and the attribution rules of decisions 3."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.errors import ValidationError
from refcore.models import AffiliateStatus, Customer, EventType, KeyKind, ProgramAffiliate
from refcore.services import activity, affiliates, tracking
from refcore.services.activity import ActivityQuery
from refcore.services.runtime import Runtime, Tx
from refcore.services.tracking import Identified, IdentifyRequest
from tests.contract.scenario import LIVE, TEST, World, build_world

MANAGED = KeyKind.MANAGED_REVENUE


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock, promotion_code_fallback=True)


def clicks(world: World) -> list[object]:
    return world.rt.read(lambda tx: tx.uow.clicks.find_all({}))


def identify_by_code(
    world: World, click_id: str | None, code_owner: ProgramAffiliate | str, *, program_id: str | None = None
) -> Identified:
    """A managed key's identify with the click (if any) and the code ``SPRING`` of ``code_owner``
    (an affiliate, or any ID), naming the world's program unless ``program_id`` names another."""
    return world.identify(
        click_id,
        kind=MANAGED,
        promotion_code="SPRING",
        program_id=program_id or world.program.id,
        program_affiliate_id=code_owner if isinstance(code_owner, str) else code_owner.id,
    )


# -- interface 2.5 -----------------------------------------------------------------------------


def test_interface_2_5_rule_1_a_valid_click_wins_over_a_promotion_code(world: World) -> None:
    code_owner = world.add_affiliate()
    click_id = world.capture(LIVE)

    result = identify_by_code(world, click_id, code_owner)

    assert result.referral.attribution_source == "click"
    assert result.referral.click_id == click_id
    assert result.referral.program_affiliate_id == world.affiliate.id
    assert result.referral.attributed


@pytest.mark.parametrize("named", ["another tenant's", "made-up"])
def test_interface_2_5_rule_1_a_winning_click_still_refuses_a_program_or_affiliate_nobody_can_name(
    world: World, runtime: Runtime, clock: ManualClock, named: str
) -> None:
    """Probe G: with a valid click winning, the code's ``program_id`` and ``program_affiliate_id``
    went unread, and another tenant's (or made-up) IDs answered 201 where every other body
    naming them is 404."""
    other = build_world(runtime, clock, promotion_code_fallback=True)
    program_id, affiliate_id = (
        (other.program.id, other.affiliate.id)
        if named == "another tenant's"
        else ("prg_01made", "aff_01made")
    )
    click_id = world.capture(LIVE)
    with world.rejects("program_not_found"):  # and nothing is stored
        identify_by_code(world, click_id, world.affiliate, program_id=program_id)
    with world.rejects("program_affiliate_not_found"):
        identify_by_code(world, click_id, affiliate_id)
    assert identify_by_code(world, click_id, world.affiliate).referral.attribution_source == "click"


def test_interface_2_5_rule_1_an_unknown_click_leaves_the_promotion_code_to_attribute(world: World) -> None:
    code_owner = world.add_affiliate()
    result = identify_by_code(world, "clk_01unknown", code_owner)
    assert result.referral.attribution_source == "promotion_code"
    assert result.referral.program_affiliate_id == code_owner.id


def _disable_the_clicks_affiliate(world: World) -> None:
    affiliates.disable(world.rt, world.session, world.affiliate.id)


def _let_the_click_age_past_its_window(world: World) -> None:
    world.advance(world.program.attribution_window_days + 1)


@pytest.mark.parametrize(
    "spoil", [_disable_the_clicks_affiliate, _let_the_click_age_past_its_window], ids=["disabled", "aged"]
)
def test_interface_2_5_rule_1_a_click_that_cannot_attribute_leaves_the_promotion_code_to_attribute(
    world: World, spoil: Callable[[World], None]
) -> None:
    """Only a *valid* click wins: one that cannot attribute had won unattributed, and the
    affiliate whose code the customer used lost the commission."""
    code_owner = world.add_affiliate()
    click_id = world.capture(LIVE)
    spoil(world)
    result = identify_by_code(world, click_id, code_owner)
    assert (result.referral.attribution_source, result.referral.click_id) == ("promotion_code", None)
    assert result.referral.program_affiliate_id == code_owner.id
    assert result.referral.attributed


def test_interface_2_5_rule_1_when_neither_can_attribute_the_click_stays_unattributed(world: World) -> None:
    code_owner = world.add_affiliate()
    affiliates.disable(world.rt, world.session, code_owner.id)
    click_id = world.capture(LIVE)
    world.advance(world.program.attribution_window_days + 1)
    result = identify_by_code(world, click_id, code_owner)
    assert (result.referral.attribution_source, result.referral.click_id) == ("click", click_id)
    assert result.referral.program_affiliate_id == world.affiliate.id
    assert not result.referral.attributed


@pytest.mark.parametrize("mode", [LIVE, TEST])
def test_interface_2_5_rule_2_code_attribution_returns_no_click_and_creates_none(
    world: World, mode: object
) -> None:
    before = clicks(world)

    result = world.identify(
        None,
        mode,  # type: ignore[arg-type]
        kind=MANAGED,
        promotion_code="SPRING",
        program_id=world.program.id,
        program_affiliate_id=world.affiliate.id,
    )

    response = result.response()
    assert response["click_id"] is None
    assert response["processor_metadata"]["service_click_id"] is None
    assert response["attribution_source"] == "promotion_code"
    assert response["attributed"] is True
    assert clicks(world) == before


def test_interface_2_5_rule_2_code_attribution_needs_the_program_fallback(
    runtime: Runtime, clock: ManualClock
) -> None:
    world = build_world(runtime, clock)  # promotion_code_fallback defaults to false
    with world.rejects("promotion_code_not_allowed"):
        identify_by_code(world, None, world.affiliate)


@pytest.mark.parametrize("mode", [LIVE, TEST])
def test_interface_2_5_rule_3_ordinary_app_keys_cannot_send_promotion_code(
    world: World, mode: object
) -> None:
    click_id = world.capture(mode)  # type: ignore[arg-type]
    with world.rejects("promotion_code_not_allowed", "promotion_code"):
        world.identify(
            click_id,
            mode,  # type: ignore[arg-type]
            promotion_code="SPRING",
            program_id=world.program.id,
            program_affiliate_id=world.affiliate.id,
        )


def test_interface_2_5_identify_response_carries_processor_metadata(world: World) -> None:
    result = world.referred_customer()
    response = result.response()
    assert response["processor_metadata"] == {
        "service_click_id": result.referral.click_id,
        "service_customer_id": result.customer.id,
        "service_program_id": world.program.id,
    }
    assert response["customer_id"].startswith("rcus_")
    assert response["referral_id"].startswith("ref_")
    assert response["attribution_source"] == "click"


# -- decisions 3 -------------------------------------------------------------------------------


def test_decisions_3_click_inside_the_attribution_window_attributes(world: World, clock: ManualClock) -> None:
    click_id = world.capture()
    clock.advance(timedelta(days=60))
    assert world.identify(click_id).referral.attributed


def test_decisions_3_click_outside_the_attribution_window_does_not_attribute(
    world: World, clock: ManualClock
) -> None:
    click_id = world.capture()
    clock.advance(timedelta(days=60, seconds=1))
    result = world.identify(click_id)
    assert not result.referral.attributed
    assert result.referral.click_id == click_id


def test_decisions_3_paused_program_records_clicks_but_does_not_attribute(world: World) -> None:
    earning = world.referred_customer()
    world.set_program_status("pause")
    click_id = world.capture()  # still recorded
    assert not world.identify(click_id).referral.attributed
    # Existing referrals keep earning while paused.
    assert world.pay(earning, 10_000).record.commission_amount == 2_000
    world.set_program_status("resume")
    assert world.referred_customer().referral.attributed


@pytest.mark.parametrize("status", [AffiliateStatus.PENDING, AffiliateStatus.DISABLED])
def test_decisions_3_pending_or_disabled_affiliate_does_not_attribute(
    world: World, status: AffiliateStatus
) -> None:
    affiliate = world.add_affiliate(
        status=AffiliateStatus.PENDING if status is AffiliateStatus.PENDING else None
    )
    link = world.add_link(affiliate)
    if status is AffiliateStatus.DISABLED:
        affiliates.disable(world.rt, world.session, affiliate.id)
    assert not world.referred_customer(link=link).referral.attributed


def test_decisions_3_approved_or_re_enabled_affiliate_attributes_again(world: World) -> None:
    pending = world.add_affiliate(status=AffiliateStatus.PENDING)
    link = world.add_link(pending)
    affiliates.approve(world.rt, world.session, pending.id)
    assert world.referred_customer(link=link).referral.attributed
    affiliates.disable(world.rt, world.session, pending.id)
    affiliates.enable(world.rt, world.session, pending.id)
    assert world.referred_customer(link=link).referral.attributed


@pytest.mark.parametrize("email", ["partner@example.com", "Partner@Example.COM"])
def test_decisions_3_self_referral_is_not_attributed(world: World, email: str) -> None:
    result = world.referred_customer(email=email)
    assert not result.referral.attributed


#: ``josé@…`` with its ``é`` as one character (NFC) and as ``e`` and a combining accent (NFD).
_COMPOSED = "jos\u00e9@example.com"
_DECOMPOSED = "jose\u0301@example.com"


@pytest.mark.parametrize(
    ("affiliate_email", "customer_email"), [(_COMPOSED, _DECOMPOSED), (_DECOMPOSED, _COMPOSED)]
)
def test_decisions_3_self_referral_is_recognized_in_either_unicode_spelling(
    world: World, affiliate_email: str, customer_email: str
) -> None:
    """Probe Q: the address compared as sent, so an affiliate could refer themself by spelling
    their own ``é`` the other way."""
    affiliate = world.add_affiliate(email=affiliate_email)
    assert affiliate.email == _COMPOSED  # kept composed (NFC), whichever way it was sent
    result = world.identify(world.capture(link=world.add_link(affiliate)), email=customer_email)
    assert not result.referral.attributed


def test_decisions_3_one_customer_for_an_address_in_either_unicode_spelling(world: World) -> None:
    first = world.identify(world.capture(), email=_DECOMPOSED)
    again = world.identify(world.capture(), email=_COMPOSED.upper())
    assert first.customer.email == _COMPOSED
    assert not again.created and again.customer == first.customer


def test_an_affiliate_address_in_the_other_unicode_spelling_is_already_in_the_program(world: World) -> None:
    world.add_affiliate(email=_COMPOSED)
    with pytest.raises(ValidationError, match="already an affiliate"):
        world.add_affiliate(email=_DECOMPOSED)


#: One mailbox whose domain is written in Unicode and in IDNA's ASCII form.
_UNICODE_DOMAIN = "me@b\u00fccher.example"
_ASCII_DOMAIN = "me@xn--bcher-kva.example"


@pytest.mark.parametrize(
    ("affiliate_email", "customer_email"),
    [(_UNICODE_DOMAIN, _ASCII_DOMAIN), (_ASCII_DOMAIN, _UNICODE_DOMAIN.upper())],
)
def test_decisions_3_self_referral_is_recognized_whichever_way_the_domain_is_written(
    world: World, affiliate_email: str, customer_email: str
) -> None:
    """Probe AI: the ASCII form of the affiliate's own domain had been attributed."""
    affiliate = world.add_affiliate(email=affiliate_email)
    assert affiliate.email == _UNICODE_DOMAIN
    result = world.identify(world.capture(link=world.add_link(affiliate)), email=customer_email)
    assert not result.referral.attributed


def test_an_affiliate_address_with_its_domain_in_the_other_form_is_already_in_the_program(
    world: World,
) -> None:
    world.add_affiliate(email=_ASCII_DOMAIN)
    with pytest.raises(ValidationError, match="already an affiliate"):
        world.add_affiliate(email=_UNICODE_DOMAIN)


def test_decisions_3_first_attribution_wins(world: World) -> None:
    first = world.referred_customer(external_customer_id="user-1")
    other = world.add_affiliate()
    later = world.identify(world.capture(link=world.add_link(other)), external_customer_id="user-1")

    assert not later.created
    assert (later.customer, later.referral) == (first.customer, first.referral)
    assert later.referral.program_affiliate_id == world.affiliate.id


def test_decisions_3_of_two_customers_stored_for_one_address_the_oldest_answers(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """Identify keeps one customer per address known only by e-mail, but ``Twin@x.example`` and
    ``twin@x.example`` stored before it lower-cased addresses were two, the same address since
    migrations 0008 and 0012. The first of them answers, whatever order the store returns them
    in: here the younger one has the lower ID."""
    first = world.referred_customer(email="twin@x.example")
    clock.advance(timedelta(days=1))
    younger = Customer(
        id="rcus_0", app_id=world.app.id, mode=LIVE, created_at=clock.now(), email="twin@x.example"
    )
    younger_referral = evolve(first.referral, id="ref_0", customer_id=younger.id, created_at=clock.now())

    def store_the_twin(tx: Tx) -> None:
        tx.uow.customers.add(younger)
        tx.uow.referrals.add(younger_referral)

    runtime.transaction(store_the_twin)
    again = world.identify(world.capture(), email="Twin@X.example")
    assert not again.created
    assert (again.customer, again.referral) == (first.customer, first.referral)


def test_decisions_3_first_unattributed_identify_also_wins(world: World, clock: ManualClock) -> None:
    stale = world.capture()
    clock.advance(timedelta(days=61))
    first = world.identify(stale, external_customer_id="user-1")
    later = world.identify(world.capture(), external_customer_id="user-1")
    assert not first.referral.attributed
    assert later.referral == first.referral


def test_decisions_3_customers_are_unique_per_mode(world: World) -> None:
    live = world.referred_customer(LIVE, external_customer_id="user-1")
    test = world.referred_customer(TEST, external_customer_id="user-1")
    assert live.customer.id != test.customer.id
    assert test.created


def test_decisions_3_unattributed_identify_still_creates_customer_and_referral(
    world: World, clock: ManualClock
) -> None:
    click_id = world.capture()
    clock.advance(timedelta(days=90))

    result = world.identify(click_id, external_customer_id="user-1")

    assert result.created
    assert not result.referral.attributed
    assert result.response()["attributed"] is False
    stored = world.rt.read(lambda tx: tx.uow.referrals.find_one({"customer_id": result.customer.id}))
    assert stored == result.referral
    assert world.rt.read(lambda tx: tx.uow.customers.get(result.customer.id)) == result.customer
    assert world.events(EventType.REFERRAL_CREATED) == []


def test_decisions_3_unknown_click_is_click_not_found(world: World) -> None:
    with world.rejects("click_not_found"):
        world.identify("clk_01kdvdna00zay55en34bhbmx85")


def test_decisions_3_click_of_the_other_mode_is_mode_mismatch(world: World) -> None:
    test_click = world.capture(TEST)
    live_click = world.capture(LIVE)
    with world.rejects("mode_mismatch"):
        world.identify(test_click, LIVE)
    with world.rejects("mode_mismatch"):
        world.identify(live_click, TEST)


def test_decisions_3_click_of_another_app_is_click_not_found(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    stranger = build_world(runtime, clock)
    foreign_click = stranger.capture()
    with world.rejects("click_not_found"):
        world.identify(foreign_click)


def test_decisions_3_identify_needs_a_customer_identifier(world: World) -> None:
    click_id = world.capture()
    with world.rejects("validation_error", "external_customer_id"):
        tracking.identify(world.rt, world.key(), world.scope(), IdentifyRequest(click_id=click_id))


def test_decisions_3_ordinary_keys_need_a_click_id(world: World) -> None:
    with world.rejects("validation_error", "click_id"):
        world.identify(None, external_customer_id="user-1")


def test_interface_2_5_code_attribution_needs_program_and_affiliate(world: World) -> None:
    with world.rejects("validation_error", "program_id"):
        world.identify(None, kind=MANAGED, promotion_code="SPRING", program_affiliate_id=world.affiliate.id)
    with world.rejects("validation_error", "program_affiliate_id"):
        world.identify(None, kind=MANAGED, promotion_code="SPRING", program_id=world.program.id)


def test_interface_2_5_code_attribution_of_an_affiliate_of_another_program_is_not_found(world: World) -> None:
    other_program = world.add_program(promotion_code_fallback=True)
    outsider = world.add_affiliate(program=other_program)
    with world.rejects("program_affiliate_not_found"):
        world.identify(
            None,
            kind=MANAGED,
            promotion_code="SPRING",
            program_id=world.program.id,
            program_affiliate_id=outsider.id,
        )


def test_interface_2_5_code_attribution_of_another_apps_program_is_not_found(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    stranger = build_world(runtime, clock, promotion_code_fallback=True)
    with world.rejects("program_not_found"):
        world.identify(
            None,
            kind=MANAGED,
            promotion_code="SPRING",
            program_id=stranger.program.id,
            program_affiliate_id=stranger.affiliate.id,
        )


def test_decisions_3_code_attribution_follows_the_same_rules_as_clicks(world: World) -> None:
    pending = world.add_affiliate(status=AffiliateStatus.PENDING)
    by_pending = world.identify(
        None, kind=MANAGED, promotion_code="A", program_id=world.program.id, program_affiliate_id=pending.id
    )
    self_referral = world.identify(
        None,
        kind=MANAGED,
        email="partner@example.com",
        promotion_code="B",
        program_id=world.program.id,
        program_affiliate_id=world.affiliate.id,
    )
    world.set_program_status("pause")
    paused = world.identify(
        None,
        kind=MANAGED,
        promotion_code="C",
        program_id=world.program.id,
        program_affiliate_id=world.affiliate.id,
    )
    assert [r.referral.attributed for r in (by_pending, self_referral, paused)] == [False, False, False]
    assert world.events(EventType.REFERRAL_CREATED) == []


def test_decisions_1_managed_revenue_keys_identify_like_app_keys(world: World) -> None:
    result = world.identify(world.capture(), kind=MANAGED)
    assert result.referral.attributed and result.referral.attribution_source == "click"


def test_decisions_3_a_customer_known_only_by_e_mail_is_found_whatever_its_case(world: World) -> None:
    """``Case_x@X.example`` then ``case_x@x.example`` had made two customers with a referral
    each, the second bypassing "first attribution wins"; addresses are kept lower-case."""
    first = world.identify(world.capture(), email="Case_x@X.example")
    again = world.identify(world.capture(), email="case_x@x.EXAMPLE")
    assert (first.created, again.created) == (True, False)
    assert again.customer.id == first.customer.id and again.referral.id == first.referral.id
    assert first.customer.email == "case_x@x.example"
    query = ActivityQuery(filters={"email": "CASE_X@x.example"})
    listed = activity.list_customers(world.rt, world.key(LIVE), query)
    assert [c.id for c in listed.data] == [first.customer.id]


@pytest.mark.parametrize("param", ["program_id", "program_affiliate_id"])
def test_interface_2_5_program_and_affiliate_are_sent_only_with_a_promotion_code(
    world: World, param: str
) -> None:
    """Without a code they decide nothing (the click names the program) and had been ignored,
    even when they named another tenant's program: the caller is told, and nothing is made."""
    stranger = build_world(world.rt, world.clock)
    named = {"program_id": stranger.program.id, "program_affiliate_id": stranger.affiliate.id}[param]
    click_id = world.capture(LIVE)
    with world.rejects("validation_error", param):
        world.identify(click_id, kind=MANAGED, **{param: named})  # type: ignore[arg-type]
    assert world.rt.read(lambda tx: tx.uow.customers.find_all({})) == []


def test_decisions_2_a_deleted_link_takes_no_click_but_its_earlier_clicks_still_attribute(
    world: World,
) -> None:
    link = world.add_link()
    earlier = world.capture(LIVE, link=link)
    affiliates.delete_link(world.rt, world.session, world.affiliate.id, link.id)
    with world.rejects("link_not_found"):
        world.capture(LIVE, link=link)
    result = world.identify(earlier)
    assert result.referral.attributed and result.referral.click_id == earlier
