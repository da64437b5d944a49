"""Hosted join (decisions 6): the public join page, signups confirmed by e-mail, affiliate keys.

1. ``GET /v1/join/:programSlug`` — :func:`join_page`: what a sign-up page shows (program, terms,
   the App's name, logo and agreement). Public.
2. ``POST /v1/join/:programSlug`` — :func:`start_signup`: records a :class:`PendingSignup` and
   mails a confirmation link whose query carries ``token=<token>``. The token is random (256
   bits), stored only as its SHA-256 digest, valid for :attr:`JoinPolicy.token_ttl` (24 hours)
   and usable once. The answer never contains it: only the mailbox owner learns it.
3. ``POST /v1/join/:programSlug/confirm`` — :func:`confirm_signup`: spends the token, creates the
   program affiliate (``active`` when the program auto-approves, otherwise ``pending``), emits
   ``affiliate.created`` and returns an affiliate key ``key_aff_…``, shown this once. For an
   address that is already an affiliate of the program, it issues that affiliate a new key.

Rules chosen here (docs/api.md, "Hosted join"):

- Signups are rate-limited per e-mail address and per client IP, in the store (so across
  processes): :attr:`JoinPolicy.per_email` and :attr:`JoinPolicy.per_ip` per window.
- A paused program still takes signups (it is expected to resume); a disabled program has no join
  page: all three routes answer ``404 program_not_found`` for it.
- An address that is already an affiliate of the program gets a "you are already a member"
  message whose link, confirmed, issues that affiliate a new key, and the same answer as anyone
  else, so the form cannot be used to find out who the affiliates are. This is how an affiliate
  the Developer added (``POST /v1/program-affiliates``, which issues no key) gets its first key,
  and how one that lost its key gets another: the mailbox proves who it is, as at signup. Keys
  issued before stay valid; the Developer revokes one with ``DELETE /v1/api-keys/:id``.
- A token that is unknown (or of another program), expired or already used is
  ``400 invalid_signup_token``; the message says which.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from attrs import Attribute, evolve, field, frozen

from refcore.credentials import digest, new_secret
from refcore.errors import InternalError, InvalidSignupToken, NotFound, ValidationError
from refcore.models import AffiliateStatus, App, Program, ProgramAffiliate, ProgramStatus, ProgramTerms
from refcore.models.app_profile import AgreementVersion, AppLogo
from refcore.models.signup import PendingSignup
from refcore.ports.mailer import Mailer, Message
from refcore.services import rate_limits
from refcore.services.affiliates import create_affiliate
from refcore.services.app_profile import current_agreement, current_logo
from refcore.services.runtime import Runtime, Tx
from refcore.services.tenancy import IssuedKey, issue_affiliate_key
from refcore.validation import ascii_lower, kept_address, require_line, require_text

log = logging.getLogger("refcore.join")

#: How long an unconfirmed signup is kept after its token expired: a late click is still told
#: "expired; sign up again" for a week, then the signup, its address and name with it, may go.
EXPIRED_SIGNUP_KEPT = timedelta(days=7)


def signups_forgettable_before(now: datetime) -> datetime:
    """Unconfirmed signups whose token expired before this moment are not needed any more
    (confirmed ones stay: they record how their affiliate joined)."""
    return now - EXPIRED_SIGNUP_KEPT


TOKEN_PREFIX = "join_"


def _rate_limit_window(_policy: object, _attribute: Attribute[timedelta], window: timedelta) -> None:
    """Refused when the policy is made, not at the first signup it would fail."""
    rate_limits.window_start(datetime(2000, 1, 1, tzinfo=UTC), window)


@frozen
class JoinPolicy:
    """How signups behave; the HTTP server builds it from its settings."""

    #: How long a confirmation link works.
    token_ttl: timedelta = timedelta(hours=24)
    #: Signups per e-mail address per window (the address's mailbox is what is protected).
    per_email: int = 5
    #: Signups per client IP per window (offices share one address, so it is higher).
    per_ip: int = 20
    #: From one second to :data:`~refcore.services.rate_limits.LONGEST_WINDOW` (a day).
    window: timedelta = field(default=timedelta(hours=1), validator=_rate_limit_window)
    #: The page the confirmation link opens; ``{slug}`` is replaced by the program's slug and
    #: ``token=<token>`` is added to its query. That page posts the token to the confirm route.
    confirm_url: str = "http://127.0.0.1:8000/join/{slug}/confirm"

    def link(self, slug: str, token: str) -> str:
        parts = urlsplit(self.confirm_url.replace("{slug}", quote(slug, safe="")))
        query = [*parse_qsl(parts.query, keep_blank_values=True), ("token", token)]
        return urlunsplit(parts._replace(query=urlencode(query)))


@frozen
class JoinPage:
    """Everything public about a program: what a sign-up page needs, and nothing more."""

    program: Program
    app: App
    terms: ProgramTerms | None
    agreement: AgreementVersion | None
    logo: AppLogo | None


@frozen
class SignupAccepted:
    """What ``POST /v1/join/:programSlug`` answers: the same whoever the address belongs to."""

    program_id: str
    email: str
    #: Until when the link in the message works.
    expires_at: datetime


@frozen
class Joined:
    """A confirmed signup: the new program affiliate and its key (the secret, this once)."""

    affiliate: ProgramAffiliate
    key: IssuedKey


def _joinable_program(tx: Tx, slug: object) -> Program:
    text = require_text(slug, param="programSlug", max_length=64)
    program = tx.uow.programs.find_one({"slug": ascii_lower(text)})
    if program is None or program.status is ProgramStatus.DISABLED:
        raise NotFound.of("program", text)
    return program


def _current_terms(tx: Tx, program_id: str) -> ProgramTerms | None:
    newest = tx.uow.program_terms.page({"program_id": program_id}, limit=1, before=None)
    return newest[0] if newest else None


def join_page(rt: Runtime, slug: object) -> JoinPage:
    """What a program's public sign-up page shows (``GET /v1/join/:programSlug``, no credential): the
    program, its App, the current terms and agreement, and the logo. A disabled program has no join
    page.

    Errors: ``validation_error`` (``programSlug``), ``program_not_found`` (unknown or disabled)."""

    def work(tx: Tx) -> JoinPage:
        program = _joinable_program(tx, slug)
        app = tx.uow.apps.get(program.app_id)
        assert app is not None
        return JoinPage(
            program=program,
            app=app,
            terms=_current_terms(tx, program.id),
            agreement=current_agreement(tx, app.id),
            logo=current_logo(tx, app.id),
        )

    return rt.read(work)


@frozen
class _Outcome:
    program: Program
    app: App
    accepted: SignupAccepted
    signup: PendingSignup
    #: The affiliate the address already is in the program, if any: its link issues a new key.
    member: ProgramAffiliate | None


def start_signup(
    rt: Runtime,
    mailer: Mailer,
    slug: object,
    email: object,
    name: object,
    *,
    client_ip: str | None,
    policy: JoinPolicy | None = None,
) -> SignupAccepted:
    """Record a pending signup and mail its confirmation link (after the commit).

    When the address is already an affiliate of the program, the message says so and its link
    issues a new key instead; the answer is the same either way.

    ``POST /v1/join/:programSlug``. Errors: ``validation_error`` (``email``, ``name``, ``programSlug``),
    ``program_not_found``, ``rate_limited``, ``internal_error`` (the mailer failed: the signup is
    recorded, but its link never arrived).
    """
    rules = policy or JoinPolicy()
    if not callable(getattr(mailer, "send", None)):
        # Before anything is recorded: a signup without a way to send its link would be kept,
        # and the address's allowance spent, for a message that can never go (probe R).
        raise TypeError("mailer must be a refcore.ports.Mailer, with a send(message) method")
    if client_ip is not None and not isinstance(client_ip, str):
        # ``True`` and ``5`` had been counted as the addresses 0.0.0.1 and 0.0.0.5 (probe AD).
        raise ValidationError("client_ip must be the client's address, as text", param="client_ip")
    address = kept_address(email)
    display = require_line(name, param="name")
    token = new_secret(TOKEN_PREFIX)

    def work(tx: Tx) -> _Outcome:
        program = _joinable_program(tx, slug)
        app = tx.uow.apps.get(program.app_id)
        assert app is not None
        rate_limits.take(
            tx, rate_limits.limit_key("join:email", address), limit=rules.per_email, window=rules.window
        )
        if client_ip is not None:
            rate_limits.take(
                tx,
                rate_limits.limit_key("join:ip", rate_limits.client_of(client_ip)),
                limit=rules.per_ip,
                window=rules.window,
            )
        accepted = SignupAccepted(program_id=program.id, email=address, expires_at=tx.now + rules.token_ttl)
        member = tx.uow.program_affiliates.find_one({"program_id": program.id, "email": address})
        signup = PendingSignup(
            id=tx.new_id("sgn"),
            app_id=program.app_id,
            program_id=program.id,
            email=address,
            name=display,
            token_digest=digest(token),
            expires_at=accepted.expires_at,
            created_at=tx.now,
        )
        tx.uow.pending_signups.add(signup)
        return _Outcome(program=program, app=app, accepted=accepted, signup=signup, member=member)

    outcome = rt.transaction(work)
    if outcome.member is not None:
        message = _already_member_message(outcome.program, outcome.app, outcome.member, rules, token)
    else:
        message = _confirmation_message(outcome.program, outcome.app, outcome.signup, rules, token)
    try:
        mailer.send(message)
    except Exception as exc:
        # Never log the message: it carries the token.
        log.warning(
            "The join message for program %s could not be sent (%s)", outcome.program.id, type(exc).__name__
        )
        raise InternalError("The confirmation message could not be sent; try again later") from exc
    return outcome.accepted


def _confirmation_message(
    program: Program, app: App, signup: PendingSignup, rules: JoinPolicy, token: str
) -> Message:
    """The mail to an address nobody has confirmed yet, so it greets no one by name.

    The name is whatever anyone who knows the address typed on a public form, with no credential:
    quoted here, it let a stranger write the first lines of a mail that refcore signs with the
    program's and the App's names (probe J sent a phishing notice as the name). Everything in
    this mail comes from the Developer (program, App) or from refcore."""
    hours = int(rules.token_ttl.total_seconds() // 3600)
    return Message(
        to=signup.email,
        subject=f"Confirm your request to join {program.name}",
        text=(
            "Hello,\n\n"
            f"Someone, hopefully you, asked to join the {program.name} affiliate program of {app.name} "
            f"with this address.\n\n"
            f"To confirm, open this link within {hours} hours:\n\n"
            f"{rules.link(program.slug, token)}\n\n"
            f"The link works once. If you did not ask for this, ignore this message: nothing happens "
            f"without the confirmation.\n"
        ),
    )


def _already_member_message(
    program: Program, app: App, member: ProgramAffiliate, rules: JoinPolicy, token: str
) -> Message:
    """The mail to an affiliate's address, greeting it by the name the program keeps: one the
    Developer gave or a signup confirmed, never the one sent with this request."""
    hours = int(rules.token_ttl.total_seconds() // 3600)
    return Message(
        to=member.email,
        subject=f"You are already in {program.name}",
        text=(
            f"Hello {member.name},\n\n"
            f"Someone, hopefully you, asked to join the {program.name} affiliate program of {app.name} "
            f"with this address, which is already a member. Nothing was changed.\n\n"
            f"To get a new affiliate key (if {app.name} added you, or you lost yours), open this link "
            f"within {hours} hours:\n\n"
            f"{rules.link(program.slug, token)}\n\n"
            f"The link works once; the keys you already have keep working. If you did not ask for "
            f"this, ignore this message.\n"
        ),
    )


def confirm_signup(rt: Runtime, slug: object, token: object) -> Joined:
    """Spend the token: create the affiliate and its key in one unit of work, or, when the
    address is an affiliate of the program by then, issue that affiliate a new key.

    ``POST /v1/join/:programSlug/confirm``; emits ``affiliate.created`` for a new affiliate. Errors:
    ``validation_error`` (``token``, ``programSlug``), ``program_not_found``, ``invalid_signup_token``
    (unknown, of another program, already used, or expired)."""
    text = require_text(token, param="token", max_length=512)
    hashed = digest(text)

    def work(tx: Tx) -> Joined:
        program = _joinable_program(tx, slug)
        signup = tx.uow.pending_signups.find_one({"token_digest": hashed}, for_update=True)
        if signup is None or signup.program_id != program.id:
            raise InvalidSignupToken("This confirmation token is not valid for this program", param="token")
        if signup.confirmed_at is not None:
            raise InvalidSignupToken("This confirmation token was already used", param="token")
        if signup.expired(tx.now):
            raise InvalidSignupToken("This confirmation token has expired; sign up again", param="token")
        affiliate = tx.uow.program_affiliates.find_one(
            {"program_id": program.id, "email": signup.email}
        ) or create_affiliate(
            tx,
            program_id=program.id,
            app_id=program.app_id,
            email=signup.email,
            name=signup.name,
            status=AffiliateStatus.ACTIVE if program.auto_approve else AffiliateStatus.PENDING,
        )
        key = issue_affiliate_key(tx, program.app_id, affiliate.id)
        tx.uow.pending_signups.replace(evolve(signup, confirmed_at=tx.now, program_affiliate_id=affiliate.id))
        return Joined(affiliate=affiliate, key=key)

    return rt.transaction(work)
