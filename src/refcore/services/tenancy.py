"""Users, sessions, organizations, Apps and API keys (decisions 1)."""

from __future__ import annotations

from attrs import evolve, frozen

from refcore.credentials import digest, new_secret
from refcore.errors import Forbidden, NotFound, Unauthenticated, ValidationError
from refcore.models import ApiKey, App, KeyKind, Membership, Mode, Organization, Session, User
from refcore.ports.lookups import Lookup
from refcore.services.access import require_app, require_organization
from refcore.services.pagination import Page, empty_page, paginate
from refcore.services.principal import Principal, PrincipalKind
from refcore.services.runtime import Runtime, Tx
from refcore.validation import kept_address, require_choice, require_line, require_text

_KEY_PREFIXES: dict[tuple[KeyKind, Mode], str] = {
    (KeyKind.APP, Mode.TEST): "key_test_app_",
    (KeyKind.APP, Mode.LIVE): "key_app_",
    (KeyKind.MANAGED_REVENUE, Mode.TEST): "key_test_managed_",
    (KeyKind.MANAGED_REVENUE, Mode.LIVE): "key_managed_",
    (KeyKind.AFFILIATE, Mode.LIVE): "key_aff_",
    (KeyKind.AFFILIATE, Mode.TEST): "key_aff_",
}
_PRINCIPAL_OF_KIND = {
    KeyKind.APP: PrincipalKind.APP_KEY,
    KeyKind.MANAGED_REVENUE: PrincipalKind.MANAGED_KEY,
    KeyKind.AFFILIATE: PrincipalKind.AFFILIATE_KEY,
}


@frozen
class IssuedKey:
    """An API key with its secret; the only moment the secret exists outside the caller."""

    key: ApiKey
    secret: str


@frozen
class IssuedSession:
    """A new dashboard session with its token; the only moment the token exists outside the
    caller (the store keeps its digest)."""

    user: User
    session: Session
    token: str


def issue_session(rt: Runtime, email: object) -> IssuedSession:
    """Create the user if missing and a new session for them; the token ``sess_…`` is returned
    once. The session authenticates until ``session.expires_at(lifetime)`` of the runtime that
    checks it (:attr:`Runtime.session_lifetime`), or until it is ended."""
    address = _address(email)
    token = new_secret("sess_")

    def work(tx: Tx) -> IssuedSession:
        user = tx.uow.users.find_one({"email": address})
        if user is None:
            user = User(id=tx.new_id("usr"), email=address, created_at=tx.now)
            tx.uow.users.add(user)
        session = Session(id=tx.new_id("ses"), user_id=user.id, token_digest=digest(token), created_at=tx.now)
        tx.uow.sessions.add(session)
        return IssuedSession(user=user, session=session, token=token)

    return rt.transaction(work)


def create_session(rt: Runtime, email: object) -> tuple[User, str]:
    """:func:`issue_session`, answering only the user and the token ``sess_…``."""
    issued = issue_session(rt, email)
    return issued.user, issued.token


def end_session(rt: Runtime, principal: Principal, credential: str) -> Session:
    """End the caller's own session, the one whose token is ``credential`` (``DELETE
    /v1/session``): from the commit on it authenticates as nothing, on every process, as an
    unknown token does. A token that no longer authenticates (ended, expired, unknown, or
    another user's) is ``unauthenticated``, like any use of it; a key is ``forbidden``.

    The token, not the principal, names the session: a principal says only whose session it
    is, and a user may hold several (one per browser), of which only this one ends."""
    user_id = _require_session(principal)
    if not isinstance(credential, str) or not credential.startswith("sess_"):
        raise refused_credential()
    hashed = digest(credential)

    def work(tx: Tx) -> Session:
        # Locked, so that two requests ending it at once end it once: the second finds no row
        # of this digest any more (PostgreSQL reads the row again after the lock) and is refused.
        session = tx.uow.sessions.find_one({"token_digest": hashed}, for_update=True)
        if (
            session is None
            or session.user_id != user_id
            or not session.authenticates_at(tx.now, tx.session_lifetime)
        ):
            raise refused_credential()
        ended = session.ended_version()
        tx.uow.sessions.replace(ended)
        return ended

    return rt.transaction(work)


def end_user_sessions(rt: Runtime, email: object) -> int | None:
    """End every session of the user with this e-mail address (an operator's ``refcore session
    --end-all``: someone left, or a token leaked); returns how many were ended, ``0`` when none
    was left, and ``None`` when no user has the address (a typo must not pass for "done").
    Expired sessions are ended too: expiry is computed from the current setting, so a longer
    lifetime would otherwise bring them back."""
    address = _address(email)

    def work(tx: Tx) -> int | None:
        user = tx.uow.users.find_one({"email": address})
        if user is None:
            return None
        ended = 0
        for session in tx.uow.sessions.find_all({"user_id": user.id}):
            if session.ended:
                continue
            # Locked before it is replaced, as every replaced record is: a session its holder
            # ends at this moment is ended by one of the two, and counted once.
            locked = tx.uow.sessions.get(session.id, for_update=True)
            if locked is None or locked.ended:
                continue
            tx.uow.sessions.replace(locked.ended_version())
            ended += 1
        return ended

    return rt.transaction(work)


def _address(email: object) -> str:
    """The e-mail address as users are stored by it: checked, then in the one form of
    :func:`refcore.validation.address_key` (lower-cased, composed)."""
    return kept_address(email)


def authenticate(rt: Runtime, credential: str) -> Principal:
    """Resolve a bearer credential to a principal; unknown, revoked, ended or expired ones are
    ``unauthenticated``."""
    return rt.read(lambda tx: principal_in(tx, credential))


def principal_in(tx: Tx, credential: str) -> Principal:
    """:func:`authenticate` inside a unit of work the caller already has (captures authenticate
    their keys with the batch they are written in: :func:`refcore.services.tracking.record_captures`).

    A session authenticates until ``tx.session_lifetime`` after it was created, judged at
    ``tx.now`` (the runtime's clock): after that it is refused exactly as an unknown token is,
    so the answer never tells that it existed. Its row is read on every request anyway
    (sessions are not remembered: :mod:`refcore_http.known_keys`), so the check costs nothing."""
    if not isinstance(credential, str):  # a library caller's None: unauthenticated, not a crash
        raise refused_credential()
    hashed = digest(credential)
    if credential.startswith("sess_"):
        session = tx.uow.sessions.find_one({"token_digest": hashed})
        if session is not None and session.authenticates_at(tx.now, tx.session_lifetime):
            return Principal(kind=PrincipalKind.SESSION, user_id=session.user_id)
    elif credential.startswith("key_"):
        key = tx.uow.api_keys.find_one({"digest": hashed})
        if key is not None and key.revoked_at is None:
            return Principal(
                kind=_PRINCIPAL_OF_KIND[key.kind],
                app_id=key.app_id,
                mode=key.mode,
                program_affiliate_id=key.program_affiliate_id,
                key_id=key.id,
            )
    raise refused_credential()


def refused_credential() -> Unauthenticated:
    """What an unknown or revoked credential gets, however it was found out."""
    return Unauthenticated("Invalid or revoked credential")


def key_still_standing(hashed: str, principal: Principal) -> Lookup[ApiKey]:
    """The lookup that finds the key of digest ``hashed``, which :func:`principal_in` found to
    be ``principal``, only while it still is: not revoked. Revoking is the one change a key
    ever sees (its App, mode, kind and program affiliate are set when it is issued), so this
    is all of :func:`principal_in` that can change for it."""
    return Lookup("api_keys", ApiKey, {"digest": hashed, "id": principal.key_id, "revoked_at": None})


def _require_session(principal: Principal) -> str:
    if not principal.is_session or principal.user_id is None:
        raise Forbidden("This operation needs a dashboard session")
    return principal.user_id


def create_organization(rt: Runtime, principal: Principal, name: object) -> Organization:
    user_id = _require_session(principal)
    text = require_line(name, param="name")

    def work(tx: Tx) -> Organization:
        org = Organization(id=tx.new_id("org"), name=text, created_at=tx.now)
        tx.uow.organizations.add(org)
        tx.uow.memberships.add(
            Membership(
                id=tx.new_id("mem"),
                organization_id=org.id,
                user_id=user_id,
                role="owner",
                created_at=tx.now,
            )
        )
        return org

    return rt.transaction(work)


def list_organizations(rt: Runtime, principal: Principal) -> list[Organization]:
    user_id = _require_session(principal)

    def work(tx: Tx) -> list[Organization]:
        memberships = tx.uow.memberships.find_all({"user_id": user_id})
        orgs = [tx.uow.organizations.get(m.organization_id) for m in memberships]
        return sorted((o for o in orgs if o is not None), key=lambda o: o.id, reverse=True)

    return rt.read(work)


def get_organization(rt: Runtime, principal: Principal, organization_id: str) -> Organization:
    def work(tx: Tx) -> Organization:
        require_organization(tx, principal, organization_id)
        org = tx.uow.organizations.get(organization_id)
        if org is None:
            raise NotFound.of("organization", organization_id)
        return org

    return rt.read(work)


def create_app(rt: Runtime, principal: Principal, organization_id: object, name: object) -> App:
    org_id = require_text(organization_id, param="organization_id")
    text = require_line(name, param="name")

    def work(tx: Tx) -> App:
        require_organization(tx, principal, org_id)
        app = App(id=tx.new_id("app"), organization_id=org_id, name=text, created_at=tx.now)
        tx.uow.apps.add(app)
        return app

    return rt.transaction(work)


def get_app(rt: Runtime, principal: Principal, app_id: str) -> App:
    return rt.read(lambda tx: require_app(tx, principal, app_id))


def update_app(rt: Runtime, principal: Principal, app_id: str, name: object) -> App:
    text = require_line(name, param="name")

    def work(tx: Tx) -> App:
        app = evolve(require_app(tx, principal, app_id, for_update=True), name=text)
        tx.uow.apps.replace(app)
        return app

    return rt.transaction(work)


def list_apps(
    rt: Runtime,
    principal: Principal,
    *,
    organization_id: str | None = None,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[App]:
    """Apps of one organization (sessions), or the key's own App (App keys).

    An App key's list is a list of one, read like any other: ``limit`` and ``starting_after``
    are checked, and ``organization_id`` must name the App's own organization (another is
    ``404``, as if it did not exist). They had been ignored, so a filter naming another tenant's
    organization answered ``200`` with the key's App."""

    def work(tx: Tx) -> Page[App]:
        if principal.is_app_key and principal.app_id is not None:
            app = tx.uow.apps.get(principal.app_id)
            if app is None:
                raise NotFound.of("app", principal.app_id)
            if organization_id is not None and organization_id != app.organization_id:
                raise NotFound.of("organization", organization_id)
            return paginate(
                tx.uow.apps, {"id": app.id}, prefix="app", limit=limit, starting_after=starting_after
            )
        user_id = _require_session(principal)
        if organization_id is None:
            orgs = [m.organization_id for m in tx.uow.memberships.find_all({"user_id": user_id})]
            if not orgs:  # no organization holds an App of theirs yet (probe AK: this was a 400)
                return empty_page(limit=limit, starting_after=starting_after)
            if len(orgs) != 1:
                raise ValidationError(
                    "organization_id is required when you belong to several organizations",
                    param="organization_id",
                )
            org_id = orgs[0]
        else:
            org_id = organization_id
        require_organization(tx, principal, org_id)
        return paginate(
            tx.uow.apps,
            {"organization_id": org_id},
            prefix="app",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def create_api_key(
    rt: Runtime, principal: Principal, app_id: object, kind: object, mode: object
) -> IssuedKey:
    _require_session(principal)
    app_ref = require_text(app_id, param="app_id")
    key_kind = require_choice(kind, KeyKind, param="kind")
    if key_kind is KeyKind.AFFILIATE:
        raise ValidationError("Affiliate keys are issued when a hosted signup is confirmed", param="kind")
    key_mode = require_choice(mode, Mode, param="mode")
    secret = new_secret(_KEY_PREFIXES[(key_kind, key_mode)])

    def work(tx: Tx) -> IssuedKey:
        require_app(tx, principal, app_ref)
        key = ApiKey(
            id=tx.new_id("akey"),
            app_id=app_ref,
            kind=key_kind,
            mode=key_mode,
            digest=digest(secret),
            last4=secret[-4:],
            created_at=tx.now,
        )
        tx.uow.api_keys.add(key)
        return IssuedKey(key=key, secret=secret)

    return rt.transaction(work)


def issue_affiliate_key(tx: Tx, app_id: str, program_affiliate_id: str) -> IssuedKey:
    """Inside a unit of work that created or confirmed an affiliate (hosted signup)."""
    secret = new_secret(_KEY_PREFIXES[(KeyKind.AFFILIATE, Mode.LIVE)])
    key = ApiKey(
        id=tx.new_id("akey"),
        app_id=app_id,
        kind=KeyKind.AFFILIATE,
        mode=Mode.LIVE,
        digest=digest(secret),
        last4=secret[-4:],
        created_at=tx.now,
        program_affiliate_id=program_affiliate_id,
    )
    tx.uow.api_keys.add(key)
    return IssuedKey(key=key, secret=secret)


def list_api_keys(
    rt: Runtime,
    principal: Principal,
    app_id: str,
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[ApiKey]:
    _require_session(principal)

    def work(tx: Tx) -> Page[ApiKey]:
        require_app(tx, principal, app_id)
        return paginate(
            tx.uow.api_keys,
            {"app_id": app_id},
            prefix="akey",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def revoke_api_key(rt: Runtime, principal: Principal, key_id: str) -> ApiKey:
    _require_session(principal)

    def work(tx: Tx) -> ApiKey:
        key = tx.uow.api_keys.get(key_id, for_update=True)
        if key is None:
            raise NotFound.of("api_key", key_id)
        try:
            require_app(tx, principal, key.app_id)
        except NotFound:
            raise NotFound.of("api_key", key_id) from None
        if key.revoked_at is None:
            key = evolve(key, revoked_at=tx.now)
            tx.uow.api_keys.replace(key)
        return key

    return rt.transaction(work)
