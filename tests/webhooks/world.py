"""Helpers shared by the webhook tests: configure an endpoint, produce one event of every type."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from refcore.crypto import SecretBox
from refcore.models import AffiliateStatus, DisputeStatus, EventType, WebhookDelivery, WebhookEndpoint
from refcore.models.payout import PayoutExecutionStatus
from refcore.services import affiliates, payout_executions, payouts
from refcore.services import webhooks as webhook_service
from refcore.services.webhooks import ConfiguredEndpoint
from tests.contract.scenario import World, unique

#: Every type of interface 6.1, plus ``webhook.test``.
EVERY_TYPE = frozenset(EventType)


def configure(world: World, box: SecretBox, url: str, **settings: Any) -> ConfiguredEndpoint:
    """Configure the endpoint one second after the world was built: the events of the set-up
    happened before the endpoint existed and are not sent to it."""
    world.clock.advance(timedelta(seconds=1))
    return webhook_service.configure_endpoint(
        world.rt, world.session, box, world.app.id, {"url": url, **settings}
    )


def produce_every_event(world: World) -> None:
    """Drive the services so that each type of :data:`EVERY_TYPE` is emitted at least once.

    Needs a program with ``hold_days=0`` so that commission is payable at once.
    """
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
    other = world.add_affiliate()
    world.pay(world.referred_customer(link=world.add_link(other)), 4_000)
    batch = payouts.prepare_batch(world.rt, world.session, world.program.id)
    view = payouts.dispatch_batch(world.rt, world.session, batch.id)  # payout.ready, one per affiliate
    succeeded, failed, *_ = view.executions
    for execution, outcome in ((succeeded, "succeeded"), (failed, "failed")):
        # payout.succeeded with commission.paid per entry; payout.failed
        payout_executions.report_outcome(
            world.rt,
            world.key(),
            execution.id,
            PayoutExecutionStatus(outcome),
            idempotency_key=unique("idem-"),
        )
    webhook_service.send_test_event(world.rt, world.session, world.app.id)  # webhook.test


def stored_endpoint(world: World) -> WebhookEndpoint | None:
    return world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": world.app.id}))


def deliveries(world: World) -> list[WebhookDelivery]:
    return world.rt.read(lambda tx: tx.uow.webhook_deliveries.find_all({"app_id": world.app.id}))
