"""Capture and identify (interface 2.4, 2.5; decisions 3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import field, frozen

from refcore.errors import FieldNotAllowed, NotFound, PromotionCodeNotAllowed, RefcoreError, ValidationError
from refcore.models import Click, Customer, EventType, Link, Mode, Program, ProgramAffiliate, Referral
from refcore.ports.lookups import FieldOf, Found, Lookup
from refcore.representation import JsonObject, represent
from refcore.rules.attribution import click_within_window, may_attribute
from refcore.services.access import activity_scope, check_activity
from refcore.services.principal import Principal, Scope
from refcore.services.runtime import Runtime, Tx
from refcore.services.tenancy import principal_in
from refcore.validation import (
    address_key,
    ascii_lower,
    optional_email,
    optional_ip_address,
    optional_text,
    require_text,
)

MAX_URL = 2048


@frozen
class CaptureRequest:
    via: str
    page: str | None = None
    referrer: str | None = None
    visitor_ip: str | None = None
    visitor_user_agent: str | None = None


@frozen
class Credential:
    """A server capture's bearer credential, not yet authenticated: :func:`record_captures`
    authenticates it with the rest of its batch. A secret, so never part of a repr."""

    secret: str = field(repr=False)


#: Who sent a capture: ``None`` for public browser capture (a Live click on any App's link), the
#: :class:`Scope` of an authenticated App key (its App's links only, in its mode), or the
#: :class:`Credential` of a server capture whose key is authenticated when it is recorded.
Caller = Scope | Credential | None


@frozen
class PendingCapture:
    """A capture that passed validation and waits to be recorded, alone or with others."""

    code: str
    caller: Caller
    page: str | None
    referrer: str | None
    visitor_ip: str | None
    visitor_user_agent: str | None


def check_capture(request: CaptureRequest, *, caller: Caller) -> PendingCapture:
    """Validate a capture without touching the store (``400`` before anything is written).

    With a key (``caller`` a scope or a credential) the link must belong to the key's App and the
    click has the key's mode. Without one (public browser capture) the click is Live and visitor
    metadata must come from the HTTP request, so the caller passes it in ``request`` only after
    taking it from the connection.
    """
    return check_capture_fields(
        request.via,
        request.page,
        request.referrer,
        request.visitor_ip,
        request.visitor_user_agent,
        caller=caller,
    )


def check_capture_fields(
    via: object,
    page: object,
    referrer: object,
    visitor_ip: object,
    visitor_user_agent: object,
    *,
    caller: Caller,
) -> PendingCapture:
    """:func:`check_capture` of a capture's fields as they are. A browser's capture, the busiest
    request there is, has them at hand, and building a :class:`CaptureRequest` of them first
    cost 0.9 µs of the 25 its event loop spends on it (``bench/history.md``, twenty-sixth
    session)."""
    return PendingCapture(
        code=ascii_lower(require_text(via, param="via", max_length=64)),
        caller=caller,
        page=optional_text(page, param="page", max_length=MAX_URL),
        referrer=optional_text(referrer, param="referrer", max_length=MAX_URL),
        # A server capture's IP is the caller's word, so it is checked; a public capture's comes
        # from the connection (or a trusted proxy's header), and is not parsed again.
        visitor_ip=(
            optional_text(visitor_ip, param="visitor_ip", max_length=64)
            if caller is None
            else optional_ip_address(visitor_ip, param="visitor_ip")
        ),
        visitor_user_agent=optional_text(visitor_user_agent, param="visitor_user_agent", max_length=1024),
    )


def record_captures(rt: Runtime, captures: Sequence[PendingCapture]) -> list[Click | RefcoreError]:
    """Record many captures in one unit of work: each one's click, or the error of that one alone
    (``link_not_found``; for a server capture, ``unauthenticated`` or ``forbidden``).

    A click is one row that nothing else reads in the same request, so what costs is everything
    around that row: the unit of work, the key's and the link's lookups, the commit. Recording the
    captures that arrive together in one unit of work pays those once for all of them (each
    distinct key is authenticated once and each distinct link read once, the clicks are inserted
    by one statement), and every capture still gets its own answer only after the commit. A
    server capture's key is looked up in this same unit of work, as every request's is in its
    own: a revoked key fails the captures of the batches after its revocation committed. A key
    that fails is looked up again for each capture that sends it, so each gets an error of its own.
    """

    def work(tx: Tx) -> list[Click | RefcoreError]:
        scopes: dict[str, Scope] = {}
        links: dict[str, Link | None] = {}
        outcomes: list[Click | RefcoreError] = []
        clicks: list[Click] = []
        # IDs in the captures' order; those of captures that fail are never used.
        click_ids = tx.new_ids("clk", len(captures))
        for pending, click_id in zip(captures, click_ids, strict=True):
            scope = pending.caller
            if isinstance(scope, Credential):
                secret = scope.secret
                if secret not in scopes:
                    try:
                        scopes[secret] = activity_scope(principal_in(tx, secret))
                    except RefcoreError as error:  # unauthenticated or forbidden: this capture's alone
                        outcomes.append(error)
                        continue
                scope = scopes[secret]
            if pending.code not in links:
                links[pending.code] = tx.uow.links.find_one({"code": pending.code})
            link = links[pending.code]
            if (
                link is None
                or link.deleted_at is not None
                or (scope is not None and link.app_id != scope.app_id)
            ):
                outcomes.append(NotFound.of("link", pending.code))
                continue
            click = Click(
                id=click_id,
                app_id=link.app_id,
                mode=Mode.LIVE if scope is None else scope.mode,
                program_id=link.program_id,
                program_affiliate_id=link.program_affiliate_id,
                link_id=link.id,
                created_at=tx.now,
                page=pending.page,
                referrer=pending.referrer,
                visitor_ip=pending.visitor_ip,
                visitor_user_agent=pending.visitor_user_agent,
            )
            clicks.append(click)
            outcomes.append(click)
        tx.uow.clicks.add_all(clicks)
        return outcomes

    return rt.transaction(work)


def capture(rt: Runtime, request: CaptureRequest, *, scope: Scope | None) -> Click:
    """Record a click on a link (see :func:`check_capture`): a batch of one.

    The route (``POST /v1/capture``) records its captures in batches through :func:`record_captures`
    instead. ``scope=None`` is a public capture: a Live click on any App's link.

    Errors: ``validation_error`` (``via``, ``page``, ``referrer``, ``visitor_ip``,
    ``visitor_user_agent``), ``link_not_found`` (unknown, deleted, or another App's link)."""
    (outcome,) = record_captures(rt, [check_capture(request, caller=scope)])
    if isinstance(outcome, RefcoreError):
        raise outcome
    return outcome


def reject_public_visitor_fields(body: dict[str, Any]) -> None:
    """Public browser capture cannot set visitor metadata from its body (interface 2.4)."""
    for name in ("visitor_ip", "visitor_user_agent"):
        if name in body:
            raise FieldNotAllowed(f"{name} is only accepted on authenticated server capture", param=name)


@frozen
class IdentifyRequest:
    click_id: str | None = None
    external_customer_id: str | None = None
    email: str | None = None
    promotion_code: str | None = None
    program_id: str | None = None
    program_affiliate_id: str | None = None


@frozen
class Identified:
    customer: Customer
    referral: Referral
    created: bool

    def response(self) -> JsonObject:
        """The identify response of interface 2.5."""
        referral = self.referral
        return {
            "customer_id": self.customer.id,
            "referral_id": referral.id,
            "program_id": referral.program_id,
            "click_id": referral.click_id,
            "attribution_source": referral.attribution_source,
            "attributed": referral.attributed,
            "livemode": referral.mode.livemode,
            "processor_metadata": {
                "service_click_id": referral.click_id,
                "service_customer_id": self.customer.id,
                "service_program_id": referral.program_id,
            },
        }


@frozen
class _Evidence:
    program_id: str
    program_affiliate_id: str | None
    click_id: str | None
    source: str
    attributed: bool


def _first_customer_by_email(tx: Tx, scope: Scope, email: str | None) -> Customer | None:
    """The App's oldest customer known only by this address.

    Identify keeps one such customer per address since it began to lower-case them, but
    ``Case@x.example`` and ``case@x.example`` stored before had been two, and are the same
    address now (migrations 0008 and 0012). The first of them keeps answering, as first
    attribution wins, whatever order the store returns them in."""
    # Filtered here rather than in the query, which then reads the (App, mode, e-mail) index in
    # ID order; customers known by an external ID too are few for one address.
    same_address = tx.uow.customers.find_all({"app_id": scope.app_id, "mode": scope.mode, "email": email})
    matching = [customer for customer in same_address if customer.external_customer_id is None]
    return min(matching, key=lambda customer: (customer.created_at, customer.id), default=None)


def identify(rt: Runtime, principal: Principal, scope: Scope, request: IdentifyRequest) -> Identified:
    """Create (or find) the customer and their one referral.

    Rules: ordinary App keys cannot send ``promotion_code`` (interface 2.5 rule 3); a valid click
    wins over a code (rule 1); code attribution has no click (rule 2); first attribution wins.

    ``POST /v1/identify``. ``principal`` only decides whether ``promotion_code`` may be sent; ``scope``
    is where the customer is written: the :func:`~refcore.services.access.activity_scope` of the same
    key.

    Errors: ``promotion_code_not_allowed``, ``validation_error``, ``click_not_found``,
    ``mode_mismatch``, ``program_not_found``, ``program_affiliate_not_found``.
    """
    if request.promotion_code is not None and not principal.may_use_promotion_code:
        raise PromotionCodeNotAllowed(
            "Only managed revenue keys may identify by promotion_code", param="promotion_code"
        )
    click_id = optional_text(request.click_id, param="click_id")
    external_id = optional_text(request.external_customer_id, param="external_customer_id")
    # As every address refcore keeps (affiliates, users, signups; address_key): a customer known
    # only by e-mail is found by it, and ``Case@X.example`` had become a second customer, with
    # a referral of its own, beside ``case@x.example``.
    email = optional_email(request.email)
    email = None if email is None else address_key(email)
    code = optional_text(request.promotion_code, param="promotion_code")
    if external_id is None and email is None:
        raise ValidationError("external_customer_id or email is required", param="external_customer_id")
    if click_id is None and code is None:
        raise ValidationError("click_id is required", param="click_id")
    if code is not None:
        require_text(request.program_id, param="program_id")
        require_text(request.program_affiliate_id, param="program_affiliate_id")
    else:
        # Interface 2.5: both are "sent with promotion_code". Without one they decide nothing
        # (the click names the program), and had been ignored, even another tenant's IDs: a
        # caller that believed it chose the program is told instead.
        for param, value in (
            ("program_id", request.program_id),
            ("program_affiliate_id", request.program_affiliate_id),
        ):
            if value is not None:
                raise ValidationError(f"{param} is sent only with promotion_code", param=param)

    def work(tx: Tx) -> Identified:
        # The click with its program and affiliate, and a customer known by external ID with
        # its referral: one statement on a SQL store (ports.lookups). A customer known only by
        # e-mail is read after the App's lock (below), so it cannot be read with them.
        clicks = _ClickReads.of(click_id) if click_id is not None else None
        known = _CustomerReads.of(scope, external_id) if external_id is not None else None
        found = tx.look_up_before_events(
            scope.app_id, *(clicks.all if clicks else ()), *(known.all if known else ())
        )
        evidence = _evidence(tx, scope, request, found, clicks, code, email)
        if known is not None:
            existing, referral = found[known.customer], found[known.referral]
        else:
            # A customer known only by e-mail has no unique key a database can enforce (a NULL
            # external_customer_id never clashes), so concurrent identifies of one would each
            # create a customer. They take turns on the App's row instead: the second one in
            # reads the first one's committed customer and answers it.
            tx.uow.apps.get(scope.app_id, for_update=True)
            existing = _first_customer_by_email(tx, scope, email)
            referral = tx.uow.referrals.find_one({"customer_id": existing.id}) if existing else None
        if existing is not None and referral is not None:
            return Identified(customer=existing, referral=referral, created=False)
        customer = existing or Customer(
            id=tx.new_id("rcus"),
            app_id=scope.app_id,
            mode=scope.mode,
            created_at=tx.now,
            external_customer_id=external_id,
            email=email,
        )
        if existing is None:
            tx.uow.customers.add(customer)
        referral = Referral(
            id=tx.new_id("ref"),
            app_id=scope.app_id,
            mode=scope.mode,
            customer_id=customer.id,
            program_id=evidence.program_id,
            attributed=evidence.attributed,
            created_at=tx.now,
            program_affiliate_id=evidence.program_affiliate_id,
            click_id=evidence.click_id,
            attribution_source=evidence.source,
            promotion_code=code if evidence.source == "promotion_code" else None,
        )
        tx.uow.referrals.add(referral)
        if referral.attributed:
            tx.emit(
                EventType.REFERRAL_CREATED,
                app_id=scope.app_id,
                livemode=scope.mode.livemode,
                data=represent(referral),
            )
        return Identified(customer=customer, referral=referral, created=True)

    return rt.transaction(work)


@frozen
class _ClickReads:
    """A click and the program and affiliate it names, read together."""

    click_id: str
    click: Lookup[Click]
    program: Lookup[Program]
    affiliate: Lookup[ProgramAffiliate]

    @classmethod
    def of(cls, click_id: str) -> _ClickReads:
        click = Lookup("clicks", Click, {"id": click_id})
        return cls(
            click_id=click_id,
            click=click,
            program=Lookup("programs", Program, {"id": FieldOf(click, "program_id")}),
            affiliate=Lookup(
                "program_affiliates", ProgramAffiliate, {"id": FieldOf(click, "program_affiliate_id")}
            ),
        )

    @property
    def all(self) -> tuple[Lookup[Any], ...]:
        return (self.click, self.program, self.affiliate)


@frozen
class _CustomerReads:
    """The customer of an external ID (unique per App and mode) and its referral."""

    customer: Lookup[Customer]
    referral: Lookup[Referral]

    @classmethod
    def of(cls, scope: Scope, external_id: str) -> _CustomerReads:
        where = {"app_id": scope.app_id, "mode": scope.mode, "external_customer_id": external_id}
        customer = Lookup("customers", Customer, where)
        return cls(customer, Lookup("referrals", Referral, {"customer_id": FieldOf(customer, "id")}))

    @property
    def all(self) -> tuple[Lookup[Any], ...]:
        return (self.customer, self.referral)


def _evidence(
    tx: Tx,
    scope: Scope,
    request: IdentifyRequest,
    found: Found,
    clicks: _ClickReads | None,
    code: str | None,
    email: str | None,
) -> _Evidence:
    click: Click | None = None
    if clicks is not None:
        try:
            click = check_activity(found[clicks.click], "click", clicks.click_id, scope)
        except NotFound:
            if code is None:
                raise
    if clicks is not None and click is not None:
        program, affiliate = found[clicks.program], found[clicks.affiliate]
        assert program is not None and affiliate is not None
        attributed = click_within_window(click, program, tx.now) and may_attribute(program, affiliate, email)
        by_click = _Evidence(
            program_id=program.id,
            program_affiliate_id=affiliate.id,
            click_id=click.id,
            source="click",
            attributed=attributed,
        )
        if code is None:
            return by_click
        if attributed:
            # The click wins (interface 2.5 rule 1), but the request still named a program and
            # an affiliate with its code: another tenant's, or none at all, had passed with a
            # 201 where every other body naming them answers 404 (probe G).
            _code_references(tx, scope, request)
            return by_click
        # Interface 2.5 rule 1: a *valid* click wins. One that cannot attribute (outside its
        # window, its affiliate or program not earning, a self-referral) leaves the decision to
        # the code, direct evidence of its own; it had won unattributed and lost the code's
        # affiliate the commission. If the code cannot attribute either, the click stays.
        by_code = _code_evidence(tx, scope, request, email)
        return by_code if by_code.attributed else by_click
    return _code_evidence(tx, scope, request, email)


def _code_references(tx: Tx, scope: Scope, request: IdentifyRequest) -> tuple[Program, ProgramAffiliate]:
    """The program (of the scope's App) and its affiliate that a promotion code is sent with.

    Errors: ``program_not_found``, ``program_affiliate_not_found``."""
    assert request.program_id is not None and request.program_affiliate_id is not None
    program = tx.uow.programs.get(request.program_id)
    if program is None or program.app_id != scope.app_id:
        raise NotFound.of("program", request.program_id)
    affiliate = tx.uow.program_affiliates.get(request.program_affiliate_id)
    if affiliate is None or affiliate.program_id != program.id:
        raise NotFound.of("program_affiliate", request.program_affiliate_id)
    return program, affiliate


def _code_evidence(tx: Tx, scope: Scope, request: IdentifyRequest, email: str | None) -> _Evidence:
    """Attribution by promotion code to the program and affiliate the request names."""
    program, affiliate = _code_references(tx, scope, request)
    if not program.promotion_code_fallback:
        raise PromotionCodeNotAllowed(
            "This program does not accept promotion-code attribution", param="promotion_code"
        )
    attributed = may_attribute(program, affiliate, email)
    return _Evidence(
        program_id=program.id,
        program_affiliate_id=affiliate.id,
        click_id=None,
        source="promotion_code",
        attributed=attributed,
    )
