"""Helpers shared by the webhook tests: configure an endpoint, produce one event of every type."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from refcore.crypto import SecretBox
from refcore.models import AffiliateStatus, DisputeStatus, EventType, WebhookDelivery, WebhookEndpoint
from refcore.services import affiliates
from refcore.services import webhooks as webhook_service
from refcore.services.webhooks import ConfiguredEndpoint
from tests.contract.scenario import World, unique

#: Every type of interface 6.1 the code can produce today, plus ``webhook.test``
#: (``commission.paid`` and ``payout.*`` come with payouts).
PRODUCIBLE_TODAY = frozenset(
    {
        EventType.AFFILIATE_CREATED,
        EventType.AFFILIATE_APPROVED,
        EventType.AFFILIATE_DISABLED,
        EventType.REFERRAL_CREATED,
        EventType.TRANSACTION_CREATED,
        EventType.TRANSACTION_REFUNDED,
        EventType.COMMISSION_CREATED,
        EventType.COMMISSION_REVERSED,
        EventType.WEBHOOK_TEST,
    }
)


def configure(world: World, box: SecretBox, url: str, **settings: Any) -> ConfiguredEndpoint:
    """Configure the endpoint one second after the world was built: the events of the set-up
    happened before the endpoint existed and are not sent to it."""
    world.clock.advance(timedelta(seconds=1))
    return webhook_service.configure_endpoint(
        world.rt, world.session, box, world.app.id, {"url": url, **settings}
    )


def produce_every_event(world: World) -> None:
    """Drive the services so that each type of :data:`PRODUCIBLE_TODAY` is emitted at least once."""
    world.add_affiliate()  # affiliate.created
    pending = world.add_affiliate(status=AffiliateStatus.PENDING)  # affiliate.created
    affiliates.approve(world.rt, world.session, pending.id)  # affiliate.approved
    affiliates.disable(world.rt, world.session, pending.id)  # affiliate.disabled
    customer = world.referred_customer()  # referral.created
    paid = world.pay(customer, 10_000).record  # transaction.created, commission.created
    world.refund(paid.payment_id, 2_500)  # transaction.refunded, commission.reversed
    disputed = world.pay(customer, 5_000).record
    dispute_id = unique("dp_")
    world.dispute(dispute_id, disputed.payment_id, DisputeStatus.LOST, 5_000)  # commission.reversed
    world.dispute(dispute_id, disputed.payment_id, DisputeStatus.FUNDS_REINSTATED, 5_000)  # reinstatement
    webhook_service.send_test_event(world.rt, world.session, world.app.id)  # webhook.test


def stored_endpoint(world: World) -> WebhookEndpoint | None:
    return world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": world.app.id}))


def deliveries(world: World) -> list[WebhookDelivery]:
    return world.rt.read(lambda tx: tx.uow.webhook_deliveries.find_all({"app_id": world.app.id}))
