"""Interface 6.1 events that identify, revenue and affiliate operations produce: each created
record emits its event exactly once, in the same unit of work, and replays emit nothing."""

from __future__ import annotations

from collections import Counter

import pytest

from refcore.clocks import ManualClock
from refcore.models import AffiliateStatus, EntryKind, EventType
from refcore.services import affiliates
from refcore.services.runtime import Runtime
from tests.contract.scenario import LIVE, TEST, World, build_world

A = 10_000
T = EventType


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


def activity_events(world: World) -> list[tuple[EventType, str]]:
    """``(type, data.id)`` of every event except the set-up's ``affiliate.created``."""
    return [(e.type, e.data["id"]) for e in world.events() if e.type is not T.AFFILIATE_CREATED]


def test_events_referral_created_only_when_attributed(world: World) -> None:
    attributed = world.referred_customer()
    world.referred_customer(email="partner@example.com")  # self-referral
    world.identify(world.capture(), external_customer_id=attributed.customer.external_customer_id)  # replay

    events = world.events(T.REFERRAL_CREATED)
    assert [e.data["id"] for e in events] == [attributed.referral.id]
    data = events[0].data
    assert {"id", "customer_id", "program_id", "program_affiliate_id", "click_id", "created_at"} <= set(data)
    assert (data["customer_id"], data["program_affiliate_id"], data["click_id"]) == (
        attributed.customer.id,
        world.affiliate.id,
        attributed.referral.click_id,
    )
    assert events[0].app_id == world.app.id and events[0].livemode is True


def test_events_payment_emits_transaction_created_and_commission_created_once(world: World) -> None:
    customer = world.referred_customer()
    before = len(world.events())
    payment = world.pay(customer, A, payment_id="pay_1").record
    world.pay(customer, A, payment_id="pay_1")  # replay

    (entry,) = world.entries(payment.id)
    assert activity_events(world)[-2:] == [
        (T.TRANSACTION_CREATED, payment.id),
        (T.COMMISSION_CREATED, entry.id),
    ]
    assert len(world.events()) == before + 2
    created = world.events(T.COMMISSION_CREATED)[-1].data
    assert (created["kind"], created["amount"], created["transaction_id"]) == ("earned", 2_000, payment.id)


def test_events_refund_emits_transaction_refunded_and_commission_reversed_once(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    before = len(world.events())
    refund = world.refund(payment.payment_id, 5_000, refund_id="re_1").record
    world.refund(payment.payment_id, 5_000, refund_id="re_1")  # replay

    reversal = world.entries(payment.id)[-1]
    assert reversal.kind is EntryKind.REVERSAL
    assert activity_events(world)[-2:] == [
        (T.TRANSACTION_REFUNDED, refund.id),
        (T.COMMISSION_REVERSED, reversal.id),
    ]
    assert len(world.events()) == before + 2
    assert world.events(T.COMMISSION_REVERSED)[-1].data["amount"] == -1_000


def test_events_reinstatement_emits_commission_created_with_its_kind(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    world.dispute("dp_1", payment.payment_id, "opened", 5_000)
    world.dispute("dp_1", payment.payment_id, "lost", 5_000)
    world.dispute("dp_1", payment.payment_id, "lost", 5_000)  # replay
    world.dispute("dp_1", payment.payment_id, "funds_reinstated", 5_000)
    world.dispute("dp_1", payment.payment_id, "funds_reinstated", 5_000)  # replay

    earned, reversal, reinstatement = world.entries(payment.id)
    assert activity_events(world)[-4:] == [
        (T.TRANSACTION_CREATED, payment.id),
        (T.COMMISSION_CREATED, earned.id),
        (T.COMMISSION_REVERSED, reversal.id),
        (T.COMMISSION_CREATED, reinstatement.id),
    ]
    assert world.events(T.COMMISSION_CREATED)[-1].data["kind"] == "reinstatement"


def test_events_disputes_that_move_no_money_emit_nothing(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    before = world.events()
    world.dispute("dp_1", payment.payment_id, "opened", 5_000)
    world.dispute("dp_1", payment.payment_id, "won", 5_000)
    world.dispute("dp_2", payment.payment_id, "withdrawn", 5_000)
    assert world.events() == before


def test_events_unattributed_payment_emits_only_transaction_created(world: World) -> None:
    customer = world.referred_customer(email="partner@example.com")
    before = len(world.events())
    payment = world.pay(customer, A).record
    world.refund(payment.payment_id, 100)
    assert [e.type for e in world.events()[before:]] == [T.TRANSACTION_CREATED, T.TRANSACTION_REFUNDED]


def test_events_test_mode_activity_is_not_livemode(world: World) -> None:
    customer = world.referred_customer(TEST)
    payment = world.pay(customer, A, mode=TEST).record
    world.refund(payment.payment_id, 100, mode=TEST)
    activity = [e for e in world.events() if e.type is not T.AFFILIATE_CREATED]
    assert len(activity) == 5
    assert {e.livemode for e in activity} == {False}
    world.pay(world.referred_customer(LIVE), A)
    assert world.events()[-1].livemode is True


def test_events_rejected_operations_emit_nothing(world: World) -> None:
    payment = world.pay(world.referred_customer(), A).record
    before = world.events()
    for call in (
        lambda: world.refund(payment.payment_id, A + 1),
        lambda: world.dispute("dp_1", payment.payment_id, "funds_reinstated", 100),
        lambda: world.pay("rcus_01unknown", A),
    ):
        with pytest.raises(Exception):  # noqa: B017
            call()
    assert world.events() == before


def test_events_affiliate_lifecycle_is_live_and_once_each(world: World) -> None:
    pending = world.add_affiliate(status=AffiliateStatus.PENDING)
    affiliates.approve(world.rt, world.session, pending.id)
    affiliates.disable(world.rt, world.session, pending.id)
    affiliates.enable(world.rt, world.session, pending.id)  # the interface names no event for it

    mine = [e for e in world.events() if e.data["id"] == pending.id]
    assert [e.type for e in mine] == [T.AFFILIATE_CREATED, T.AFFILIATE_APPROVED, T.AFFILIATE_DISABLED]
    assert {e.livemode for e in mine} == {True}
    assert [e.data["status"] for e in mine] == ["pending", "active", "disabled"]


def test_events_each_created_record_has_exactly_one_event(world: World) -> None:
    customers = [world.referred_customer() for _ in range(3)]
    for index, customer in enumerate(customers):
        payment = world.pay(customer, A * (index + 1), payment_id=f"pay_{index}").record
        world.refund(payment.payment_id, 1_000, refund_id=f"re_{index}")
        world.dispute(f"dp_{index}", payment.payment_id, "lost", 2_000)
        world.pay(customer, A * (index + 1), payment_id=f"pay_{index}")

    counts = Counter((e.type, e.data["id"]) for e in world.events())
    assert set(counts.values()) == {1}
    expected = Counter()
    rt = world.rt
    for payment in rt.read(lambda tx: tx.uow.payments.find_all({})):
        expected[(T.TRANSACTION_CREATED, payment.id)] += 1
    for refund in rt.read(lambda tx: tx.uow.refunds.find_all({})):
        expected[(T.TRANSACTION_REFUNDED, refund.id)] += 1
    for entry in world.entries():
        kind = T.COMMISSION_REVERSED if entry.kind is EntryKind.REVERSAL else T.COMMISSION_CREATED
        expected[(kind, entry.id)] += 1
    for referral in rt.read(lambda tx: tx.uow.referrals.find_all({"attributed": True})):
        expected[(T.REFERRAL_CREATED, referral.id)] += 1
    expected[(T.AFFILIATE_CREATED, world.affiliate.id)] += 1
    assert counts == expected


def test_events_identify_of_another_world_never_crosses_apps(runtime: Runtime, clock: ManualClock) -> None:
    first = build_world(runtime, clock)
    second = build_world(runtime, clock)
    first.pay(first.referred_customer(), A)
    second.pay(second.referred_customer(), A)
    for world in (first, second):
        mine = [e for e in world.events() if e.app_id == world.app.id]
        assert len(mine) == 4  # affiliate.created, referral.created, transaction.created, commission.created
