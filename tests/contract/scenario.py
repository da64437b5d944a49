"""Builders for the contract suite: one call sets up everything attribution and revenue need.

A contract test should read like the rule it checks, so the set-up (session -> organization ->
App -> keys of both kinds and modes -> program -> affiliate -> link) lives here, and the
activity steps (capture, identify, pay, refund, dispute) are one short call each. Everything goes
through the public services with real credentials, so the suite checks what an adapter sees.

The module is store-agnostic: it only talks to a :class:`Runtime`, which the ``runtime`` fixture
builds once per store of ``tests/stores.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from attrs import define, evolve, field

from refcore.clocks import ManualClock
from refcore.errors import RefcoreError
from refcore.models import (
    AffiliateStatus,
    App,
    CommissionEntry,
    DisputeStatus,
    Event,
    EventType,
    KeyKind,
    Link,
    Mode,
    Organization,
    Program,
    ProgramAffiliate,
)
from refcore.ports.unit_of_work import UnitOfWork
from refcore.rules.entry_status import Balance
from refcore.services import affiliates, commissions, programs, revenue, tenancy, tracking
from refcore.services.commissions import EntryPage
from refcore.services.principal import Principal, Scope
from refcore.services.revenue import DisputeReport, PaymentReport, Recorded, RefundReport
from refcore.services.runtime import Runtime
from refcore.services.tracking import CaptureRequest, Identified, IdentifyRequest

LIVE = Mode.LIVE
TEST = Mode.TEST

#: Every repository of the unit of work, read off the port so a new table is snapshotted too.
REPOSITORIES: tuple[str, ...] = tuple(
    sorted(name for name, value in vars(UnitOfWork).items() if isinstance(value, property))
)

_serial = itertools.count(1)


def unique(prefix: str) -> str:
    """A value no other call in this process returns (slugs and link codes are installation-wide)."""
    return f"{prefix}{next(_serial)}"


def snapshot(rt: Runtime) -> dict[str, list[object]]:
    """Every committed record of every table, oldest first: compare two to prove nothing changed."""

    def read(tx: Any) -> dict[str, list[object]]:
        return {name: list(getattr(tx.uow, name).find_all({})) for name in REPOSITORIES}

    return rt.read(read)


@contextmanager
def rejected(rt: Runtime, code: str, param: str | None = None) -> Iterator[None]:
    """The block must fail with error ``code`` (and ``param`` when given) and change nothing at all:
    no record, no event, in any table (interface 4.1 rule 10: rejected operations are terminal)."""
    before = snapshot(rt)
    with pytest.raises(RefcoreError) as caught:
        yield
    assert caught.value.code == code, caught.value
    if param is not None:
        assert caught.value.param == param
    assert_unchanged(rt, before)


def assert_unchanged(rt: Runtime, before: dict[str, list[object]]) -> None:
    after = snapshot(rt)
    changed = [name for name in REPOSITORIES if after[name] != before[name]]
    assert not changed, f"tables changed: {changed}"


DEFAULT_PROGRAM: Mapping[str, Any] = {
    "name": "Partners",
    "currency": "usd",
    "commission": {"type": "percent", "bps": 2000},
    "hold_days": 30,
    "attribution_window_days": 60,
}


@define
class World:
    """One App with a program, an active affiliate and a link, plus its keys, ready for activity."""

    rt: Runtime
    clock: ManualClock
    session: Principal
    organization: Organization
    app: App
    program: Program
    affiliate: ProgramAffiliate
    link: Link
    keys: dict[tuple[KeyKind, Mode], Principal] = field(factory=dict)

    # -- credentials and scopes --------------------------------------------------------------

    def key(self, mode: Mode = LIVE, kind: KeyKind = KeyKind.APP) -> Principal:
        return self.keys[(kind, mode)]

    def scope(self, mode: Mode = LIVE) -> Scope:
        return Scope(app_id=self.app.id, mode=mode)

    # -- configuration -----------------------------------------------------------------------

    def add_affiliate(
        self,
        email: str | None = None,
        name: str = "Another affiliate",
        *,
        status: AffiliateStatus | None = None,
        program: Program | None = None,
    ) -> ProgramAffiliate:
        """Through the Developer route (``active``), or with ``status`` as a hosted signup would."""
        program = program or self.program
        address = email or f"{unique('aff')}@example.com"
        if status is None:
            return affiliates.add_program_affiliate(self.rt, self.session, program.id, address, name)
        return self.rt.transaction(
            lambda tx: affiliates.create_affiliate(
                tx, program_id=program.id, app_id=self.app.id, email=address, name=name, status=status
            )
        )

    def add_link(self, affiliate: ProgramAffiliate | None = None) -> Link:
        return affiliates.create_link(self.rt, self.session, (affiliate or self.affiliate).id)

    def add_program(self, **settings: Any) -> Program:
        values = {**DEFAULT_PROGRAM, **settings, "app_id": self.app.id, "slug": unique("prog-")}
        return programs.create_program(self.rt, self.session, values)

    def set_program_status(self, action: str, program: Program | None = None) -> Program:
        return programs.change_program_status(self.rt, self.session, (program or self.program).id, action)

    def update_program(self, **settings: Any) -> Program:
        self.program = programs.update_program(self.rt, self.session, self.program.id, settings)
        return self.program

    def set_app_fields(self, **fields: Any) -> App:
        """Change App fields no service exposes yet (processor connection, revenue lock) directly."""

        def work(tx: Any) -> App:
            app = evolve(tx.uow.apps.get(self.app.id), **fields)
            tx.uow.apps.replace(app)
            return app

        self.app = self.rt.transaction(work)
        return self.app

    def current_app(self) -> App:
        return tenancy.get_app(self.rt, self.session, self.app.id)

    # -- tracking ----------------------------------------------------------------------------

    def capture(self, mode: Mode = LIVE, link: Link | None = None) -> str:
        request = CaptureRequest(via=(link or self.link).code, page="https://app.example.com/pricing")
        return tracking.capture(self.rt, request, scope=self.scope(mode)).id

    def identify(
        self,
        click_id: str | None,
        mode: Mode = LIVE,
        *,
        external_customer_id: str | None = None,
        email: str | None = None,
        kind: KeyKind = KeyKind.APP,
        promotion_code: str | None = None,
        program_id: str | None = None,
        program_affiliate_id: str | None = None,
    ) -> Identified:
        if external_customer_id is None and email is None:
            external_customer_id = unique("cus-")
        request = IdentifyRequest(
            click_id=click_id,
            external_customer_id=external_customer_id,
            email=email,
            promotion_code=promotion_code,
            program_id=program_id,
            program_affiliate_id=program_affiliate_id,
        )
        return tracking.identify(self.rt, self.key(mode, kind), self.scope(mode), request)

    def referred_customer(
        self, mode: Mode = LIVE, *, link: Link | None = None, **identify: Any
    ) -> Identified:
        """Capture a click on the link and identify a new customer with it."""
        return self.identify(self.capture(mode, link), mode, **identify)

    # -- revenue -----------------------------------------------------------------------------

    def pay(
        self,
        customer: Identified | str,
        amount: object,
        *,
        mode: Mode = LIVE,
        payment_id: str | None = None,
        currency: object = None,
        program_id: str | None = None,
    ) -> Recorded:
        if isinstance(customer, Identified):
            customer_id, default_program = customer.customer.id, customer.referral.program_id
        else:
            customer_id, default_program = customer, self.program.id
        report = PaymentReport(
            payment_id=payment_id or unique("pay_"),
            customer_id=customer_id,
            program_id=program_id or default_program,
            amount=amount,
            currency=self.program.currency if currency is None else currency,
        )
        return revenue.record_payment(self.rt, self.scope(mode), report)

    def refund(
        self, payment_id: str, amount: object, *, refund_id: str | None = None, mode: Mode = LIVE
    ) -> Recorded:
        report = RefundReport(refund_id=refund_id or unique("re_"), payment_id=payment_id, amount=amount)
        return revenue.record_refund(self.rt, self.scope(mode), report)

    def dispute(
        self,
        dispute_id: str,
        payment_id: str,
        status: DisputeStatus | str,
        amount: object,
        *,
        mode: Mode = LIVE,
        inquiry: bool = False,
    ) -> Recorded:
        report = DisputeReport(
            dispute_id=dispute_id, payment_id=payment_id, status=str(status), amount=amount, inquiry=inquiry
        )
        return revenue.report_dispute(self.rt, self.scope(mode), report)

    # -- reading -----------------------------------------------------------------------------

    def entries(self, transaction_id: str | None = None) -> list[CommissionEntry]:
        where = {} if transaction_id is None else {"transaction_id": transaction_id}
        return self.rt.read(lambda tx: tx.uow.commission_entries.find_all(where))

    def entry_sum(self, transaction_id: str) -> int:
        return sum(e.amount for e in self.entries(transaction_id))

    def events(self, type: EventType | None = None) -> list[Event]:
        where = {} if type is None else {"type": type}
        return self.rt.read(lambda tx: tx.uow.events.find_all(where))

    def commissions(
        self, mode: Mode = LIVE, *, limit: object = None, starting_after: str | None = None, **filters: str
    ) -> EntryPage:
        return commissions.list_commissions(
            self.rt, self.scope(mode), filters, limit=limit, starting_after=starting_after
        )

    def balance(self, affiliate: ProgramAffiliate | None = None) -> Balance:
        return commissions.payout_balance(self.rt, self.session, (affiliate or self.affiliate).id)

    def snapshot(self) -> dict[str, list[object]]:
        return snapshot(self.rt)

    def rejects(self, code: str, param: str | None = None) -> Any:
        """``with world.rejects("payment_not_found"): ...``; see :func:`rejected`."""
        return rejected(self.rt, code, param)

    def advance(self, days: float) -> None:
        self.clock.advance(timedelta(days=days))


def build_world(
    rt: Runtime,
    clock: ManualClock,
    *,
    email: str | None = None,
    affiliate_email: str = "partner@example.com",
    **program_settings: Any,
) -> World:
    """A fresh developer, organization, App, four keys (app and managed revenue, both modes),
    program (``DEFAULT_PROGRAM`` overridden by ``program_settings``), active affiliate and link."""
    _user, token = tenancy.create_session(rt, email or f"{unique('dev')}@example.com")
    session = tenancy.authenticate(rt, token)
    organization = tenancy.create_organization(rt, session, "Acme")
    app = tenancy.create_app(rt, session, organization.id, "Acme App")
    keys: dict[tuple[KeyKind, Mode], Principal] = {}
    for kind in (KeyKind.APP, KeyKind.MANAGED_REVENUE):
        for mode in (Mode.TEST, Mode.LIVE):
            issued = tenancy.create_api_key(rt, session, app.id, kind.value, mode.value)
            keys[(kind, mode)] = tenancy.authenticate(rt, issued.secret)
    values = {**DEFAULT_PROGRAM, **program_settings, "app_id": app.id, "slug": unique("prog-")}
    program = programs.create_program(rt, session, values)
    affiliate = affiliates.add_program_affiliate(rt, session, program.id, affiliate_email, "Pat Partner")
    link = affiliates.create_link(rt, session, affiliate.id)
    return World(
        rt=rt,
        clock=clock,
        session=session,
        organization=organization,
        app=app,
        program=program,
        affiliate=affiliate,
        link=link,
        keys=keys,
    )


#: Events of one App, oldest first, as the mode-aware reads are tested: Live and Test interleaved,
#: and one ``webhook.test`` ping (``livemode: false``, which both modes read).
INTERLEAVED_EVENTS: tuple[tuple[EventType, bool], ...] = (
    (EventType.TRANSACTION_CREATED, True),
    (EventType.REFERRAL_CREATED, False),
    (EventType.COMMISSION_CREATED, True),
    (EventType.WEBHOOK_TEST, False),
    (EventType.TRANSACTION_CREATED, False),
    (EventType.COMMISSION_CREATED, True),
    (EventType.COMMISSION_CREATED, False),
)
