"""Payout test set-up on top of the contract suite's :class:`~tests.contract.scenario.World`.

A :class:`PayoutWorld` adds what payouts need: an affiliate key for the affiliate side, a way to
earn approved commission in one call, and one short call per payout operation.
"""

from __future__ import annotations

from typing import Any

from attrs import define

from refcore.models import Event, EventType, KeyKind, Mode, ProgramAffiliate
from refcore.models.payout import PayoutExecution, PayoutExecutionStatus
from refcore.services import payout_accounts, payout_executions, payout_requests, payouts, tenancy
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from tests.contract.scenario import World, build_world

LIVE = Mode.LIVE


def affiliate_key(rt: Runtime, affiliate: ProgramAffiliate) -> tuple[Principal, str]:
    """Issue a ``key_aff_…`` for ``affiliate`` the way a confirmed hosted signup does."""

    def work(tx: Tx) -> str:
        return tenancy.issue_affiliate_key(tx, affiliate.app_id, affiliate.id).secret

    secret = rt.transaction(work)
    return tenancy.authenticate(rt, secret), secret


@define
class PayoutWorld:
    world: World

    @property
    def rt(self) -> Runtime:
        return self.world.rt

    @property
    def live_key(self) -> Principal:
        return self.world.key(LIVE, KeyKind.APP)

    def earn(self, amount: int = 10_000, affiliate: ProgramAffiliate | None = None) -> str:
        """A Live payment by a new customer referred by ``affiliate``; returns the caller's payment ID."""
        link = self.world.add_link(affiliate) if affiliate is not None else None
        customer = self.world.referred_customer(LIVE, link=link)
        return self.world.pay(customer, amount).record.payment_id

    def past_hold(self) -> None:
        self.world.advance(self.world.program.hold_days + 1)

    def balance(self, affiliate: ProgramAffiliate | None = None) -> Any:
        affiliate = affiliate or self.world.affiliate
        return payout_accounts.get_payout_balance(
            self.rt, self.world.session, self.world.program.id, affiliate.id
        ).balance

    def prepare(self) -> Any:
        return payouts.prepare_batch(self.rt, self.world.session, self.world.program.id)

    def dispatch(self, batch_id: str) -> Any:
        return payouts.dispatch_batch(self.rt, self.world.session, batch_id)

    def report(
        self, execution_id: str, outcome: str, key: str, principal: Principal | None = None
    ) -> payout_executions.Reported:
        return payout_executions.report_outcome(
            self.rt,
            principal or self.live_key,
            execution_id,
            PayoutExecutionStatus(outcome),
            idempotency_key=key,
        )

    def mark_paid(self, affiliate: ProgramAffiliate | None = None) -> PayoutExecution:
        return payouts.mark_paid(self.rt, self.world.session, (affiliate or self.world.affiliate).id)

    def ready(self) -> list[payouts.ReadyPayout]:
        return payouts.list_ready_payouts(self.rt, self.world.session, self.world.program.id, limit=100).data

    def request(self, principal: Principal) -> Any:
        return payout_requests.create_payout_request(self.rt, principal, self.world.program.id)

    def events(self, type: EventType) -> list[Event]:
        return self.world.events(type)


def build_payout_world(rt: Runtime, clock: Any, **program_settings: Any) -> PayoutWorld:
    return PayoutWorld(build_world(rt, clock, **program_settings))
