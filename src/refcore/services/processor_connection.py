"""Connecting an App to its payment processor, one mode at a time (interface 4.7, decisions 4).

The flow has three steps:

1. :func:`create_connect_link`: the processor's install URL (a server setting) with a signed,
   expiring ``state`` naming the App and the mode. Nothing is stored: the state is the pending
   installation, and only this server can make one (HMAC with a key derived from the server key).
2. The developer installs on the processor's side, which yields the processor account ID
   (``acct_…``) and the webhook signing secret (``whsec_…``) of that installation.
3. :func:`claim_pending_install` binds both to the App and mode the state names. The state is
   single-use (its nonce is a unique key), so a leaked link cannot be claimed a second time.

:func:`disconnect` unbinds one mode. The App's ``processor_connected_<mode>`` flag, which the
revenue-source rule and the setup status read, is written in the same unit of work as the
connection itself, so the flag is true exactly while an active connection exists.

The webhook secret is needed in plain text to verify every delivery, so it is sealed with a
:class:`~refcore.crypto.SecretBox` (its own derived key, bound to the connection) rather than
digested, and destroyed on disconnect. It never appears in a response, a log or an error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from attrs import evolve, frozen

from refcore.crypto import FALLBACK_KEY_SETTING, DecryptionError, SecretBox, derive_key
from refcore.errors import (
    ModeMismatch,
    NotFound,
    RevenueSourceConflict,
    StateConflict,
    ValidationError,
)
from refcore.models import App, Mode, RevenueSource
from refcore.models.processor import (
    CONNECTION_PREFIX,
    ProcessorConnection,
    account_mode_key,
    app_mode_key,
)
from refcore.representation import JsonObject, timestamp
from refcore.services.access import require_app
from refcore.services.pagination import Page, paginate
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import require_choice, require_text

#: How long a connect link can be claimed: long enough to finish an install, short enough that a
#: link left in a browser history is useless soon.
CONNECT_LINK_TTL = timedelta(hours=1)
_STATE_VERSION = "v1"
_ACCOUNT_PREFIX = "acct_"
_SECRET_PREFIX = "whsec_"


class ProcessorKeys:
    """The keys derived from the server key (``REFCORE_SECRET_KEY``) for the processor integration:
    one seals webhook secrets, one signs connect-link states. Each purpose has its own HKDF key.

    With a ``fallback_key`` (``REFCORE_SECRET_KEY_FALLBACK``, while a fleet changes keys) secrets
    sealed under it still open and states it signed still verify, so a link issued by a process
    that had not switched yet can be claimed on one that has; sealing and signing use the
    current key only."""

    __slots__ = ("_box", "_state_key", "_state_keys")

    def __init__(self, secret_key: str, *, fallback_key: str | None = None) -> None:
        self._box = SecretBox(secret_key, purpose="processor-webhook-secret", fallback_key=fallback_key)
        self._state_key = derive_key(secret_key, "processor-connect-state")
        self._state_keys = (self._state_key,) + (
            ()
            if fallback_key is None
            else (derive_key(fallback_key, "processor-connect-state", setting=FALLBACK_KEY_SETTING),)
        )

    def __repr__(self) -> str:
        return "ProcessorKeys(<keys hidden>)"

    def seal_secret(self, connection_id: str, app_id: str, secret: str) -> str:
        return self._box.seal(secret, context=_secret_context(connection_id, app_id))

    def open_secret(self, connection: ProcessorConnection) -> str:
        """Raises :class:`~refcore.crypto.DecryptionError` under another server key."""
        return self._box.open(
            connection.webhook_secret_ciphertext, context=_secret_context(connection.id, connection.app_id)
        )

    def reseal_secret(self, connection_id: str, app_id: str, sealed: str) -> str | None:
        """``sealed`` moved to the current key, or ``None`` when it is under it already
        (:meth:`SecretBox.reseal <refcore.crypto.SecretBox.reseal>`)."""
        return self._box.reseal(sealed, context=_secret_context(connection_id, app_id))

    def mac(self, message: bytes) -> bytes:
        """The connect-link state's signature, under the current key."""
        return hmac.new(self._state_key, message, hashlib.sha256).digest()

    def verifies(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` is ``message``'s under the current key or the fallback."""
        return any(
            hmac.compare_digest(hmac.new(key, message, hashlib.sha256).digest(), signature)
            for key in self._state_keys
        )


def _secret_context(connection_id: str, app_id: str) -> str:
    return f"processor-connection/{app_id}/{connection_id}"


# -- the connect-link state ------------------------------------------------------------------


@frozen
class ConnectState:
    """What a connect link's ``state`` says: this App and mode may claim one installation."""

    app_id: str
    mode: Mode
    expires_at: datetime
    nonce: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_state(keys: ProcessorKeys, state: ConnectState) -> str:
    """``v1.<base64url(json)>.<base64url(HMAC-SHA256)>``: readable, unforgeable, expiring."""
    payload = json.dumps(
        {
            "app": state.app_id,
            "mode": state.mode.value,
            "exp": int(state.expires_at.timestamp()),
            "nonce": state.nonce,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode("utf-8")
    signed = f"{_STATE_VERSION}.{_b64(payload)}"
    return f"{signed}.{_b64(keys.mac(signed.encode('ascii')))}"


def decode_state(keys: ProcessorKeys, token: object) -> ConnectState:
    """The state, if this server signed it; ``validation_error`` otherwise. Whether it has expired
    is :func:`require_unexpired`'s question: an exact retry of its claim is answered even after."""
    text = require_text(token, param="state", max_length=1024)
    invalid = ValidationError("state is not a connect-link state issued by this server", param="state")
    version, _, rest = text.partition(".")
    body, _, mac = rest.partition(".")
    if version != _STATE_VERSION or not body or not mac:
        raise invalid
    try:
        if not keys.verifies(f"{version}.{body}".encode("ascii"), _unb64(mac)):
            raise invalid
        values = json.loads(_unb64(body))
        state = ConnectState(
            app_id=str(values["app"]),
            mode=Mode(values["mode"]),
            expires_at=datetime.fromtimestamp(int(values["exp"]), tz=UTC),
            nonce=str(values["nonce"]),
        )
    except (binascii.Error, UnicodeError, ValueError, KeyError, TypeError):
        raise invalid from None
    return state


def require_unexpired(state: ConnectState, *, now: datetime) -> None:
    if now >= state.expires_at:
        raise ValidationError("state has expired; create a new connect link", param="state")


# -- which App and mode a call is about ------------------------------------------------------


def _target_mode(principal: Principal, mode: object) -> Mode:
    """Sessions name the mode; an App key acts in its own mode (the other one is ``mode_mismatch``)."""
    if principal.is_app_key and principal.mode is not None:
        if mode is None:
            return principal.mode
        chosen = require_choice(mode, Mode, param="mode")
        if chosen is not principal.mode:
            raise ModeMismatch(
                f"A {principal.mode.value} key cannot change the {chosen.value} processor connection",
                param="mode",
            )
        return chosen
    if mode is None:
        raise ValidationError("mode is required (test or live)", param="mode")
    return require_choice(mode, Mode, param="mode")


def _target_app_id(principal: Principal, app_id: object) -> str:
    if app_id is None:
        if principal.is_app_key and principal.app_id is not None:
            return principal.app_id
        raise ValidationError("app_id is required with a session", param="app_id")
    return require_text(app_id, param="app_id")


def _active(tx: Tx, app_id: str, mode: Mode, *, for_update: bool = False) -> ProcessorConnection | None:
    return tx.uow.processor_connections.find_one(
        {"active_app_mode": app_mode_key(app_id, mode)}, for_update=for_update
    )


def _active_of_account(tx: Tx, account_id: str, mode: Mode) -> list[ProcessorConnection]:
    """The account's active connections in ``mode``, of any App (:mod:`refcore.models.processor`)."""
    return tx.uow.processor_connections.find_all({"active_account_mode": account_mode_key(account_id, mode)})


def _require_connectable(tx: Tx, app: App, mode: Mode) -> None:
    """A Live connection to an App whose Live revenue is locked to the API would only ever see its
    events refused; an App has at most one active connection per mode."""
    if mode is Mode.LIVE and app.live_revenue_source is RevenueSource.API:
        raise RevenueSourceConflict(
            "This App's Live revenue source is locked to API reporting; the processor cannot be connected"
        )
    if _active(tx, app.id, mode) is not None:
        raise StateConflict(
            f"This App already has an active {mode.value} processor connection; disconnect it first"
        )


# -- connect link ----------------------------------------------------------------------------


@frozen
class ConnectLink:
    url: str
    state: str
    app_id: str
    mode: Mode
    expires_at: datetime

    def represent(self) -> JsonObject:
        return {
            "object": "processor_connect_link",
            "url": self.url,
            "state": self.state,
            "app_id": self.app_id,
            "livemode": self.mode.livemode,
            "mode": self.mode.value,
            "expires_at": timestamp(self.expires_at),
        }


def with_state(base_url: str, state: str) -> str:
    """``base_url`` with ``state`` added to its query (any query it already has is kept)."""
    parts = urlsplit(base_url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "state"]
    query.append(("state", state))
    return urlunsplit(parts._replace(query=urlencode(query)))


def create_connect_link(
    rt: Runtime,
    principal: Principal,
    keys: ProcessorKeys,
    base_url: str,
    *,
    app_id: object = None,
    mode: object = None,
) -> ConnectLink:
    """The processor's install URL ``base_url`` with a signed, expiring ``state`` naming the App and mode
    (``POST /v1/processor/connect-link``). Nothing is stored, so it runs as a read: the state itself is
    the pending installation, which only this server can sign.

    Errors: ``validation_error`` (``mode``; ``app_id`` with a session), ``mode_mismatch`` (an App key
    naming the other mode), ``app_not_found``, ``revenue_source_conflict`` (Live revenue locked to the
    API), ``state_conflict`` (already connected in that mode)."""
    target_mode = _target_mode(principal, mode)
    target_app = _target_app_id(principal, app_id)

    def work(tx: Tx) -> ConnectLink:
        app = require_app(tx, principal, target_app)
        _require_connectable(tx, app, target_mode)
        state = ConnectState(
            app_id=app.id,
            mode=target_mode,
            # Whole seconds, as the state carries it: the link must not promise a moment later
            # than the one its state is refused at.
            expires_at=(tx.now + CONNECT_LINK_TTL).replace(microsecond=0),
            nonce=secrets.token_urlsafe(18),
        )
        token = encode_state(keys, state)
        return ConnectLink(
            url=with_state(base_url, token),
            state=token,
            app_id=app.id,
            mode=target_mode,
            expires_at=state.expires_at,
        )

    return rt.read(work)


# -- claim -----------------------------------------------------------------------------------


@frozen
class Claimed:
    connection: ProcessorConnection
    created: bool


def _require_prefixed(value: object, prefix: str, *, param: str) -> str:
    text = require_text(value, param=param)
    if not text.startswith(prefix) or len(text) == len(prefix) or any(c.isspace() for c in text):
        raise ValidationError(f"{param} must be the processor's {prefix}… value", param=param)
    return text


def claim_pending_install(
    rt: Runtime,
    principal: Principal,
    keys: ProcessorKeys,
    *,
    state: object,
    account_id: object,
    webhook_secret: object,
    app_id: object = None,
) -> Claimed:
    """Bind a completed installation to the App and mode its connect-link ``state`` names.

    Claiming the same state again with the same account and secret answers the connection
    (``created=False``), even once the state has expired (a stored answer never changes); anything
    else with a used state is ``409 state_conflict``. An account already connected to another App
    is no reason to refuse (:mod:`refcore.models.processor`): the refusal had let anyone block an
    account's owner and told them which accounts are connected. Another App's connection of the
    account with this very secret is (:func:`_require_own_secret`).

    ``POST /v1/processor/claim-pending-install``. Errors: ``validation_error`` (``account_id``,
    ``webhook_secret``, ``app_id``; a ``state`` not signed by this server, expired, or for another App),
    ``mode_mismatch``, ``app_not_found``, ``revenue_source_conflict``, ``state_conflict``.
    """
    account = _require_prefixed(account_id, _ACCOUNT_PREFIX, param="account_id")
    secret = _require_prefixed(webhook_secret, _SECRET_PREFIX, param="webhook_secret")
    named_app = None if app_id is None else require_text(app_id, param="app_id")

    def work(tx: Tx) -> Claimed:
        claim = decode_state(keys, state)
        caller_app = named_app or (principal.app_id if principal.is_app_key else None)
        if caller_app is not None and caller_app != claim.app_id:
            raise ValidationError("state was issued for another App", param="state")
        if principal.is_app_key and principal.mode is not claim.mode:
            raise ModeMismatch(
                f"state is for the {claim.mode.value} connection but the key is {principal.mode}",
                param="state",
            )
        app = require_app(tx, principal, claim.app_id, for_update=True)
        used = tx.uow.processor_connections.find_one({"install_nonce": claim.nonce})
        if used is not None:
            if used.active and used.account_id == account and keys.open_secret(used) == secret:
                return Claimed(used, created=False)
            raise StateConflict("This connect link was already claimed; create a new one", param="state")
        require_unexpired(claim, now=tx.now)
        _require_connectable(tx, app, claim.mode)
        _require_own_secret(tx, keys, account, claim.mode, secret)
        connection_id = tx.new_id(CONNECTION_PREFIX)
        connection = ProcessorConnection(
            id=connection_id,
            app_id=app.id,
            mode=claim.mode,
            account_id=account,
            webhook_secret_ciphertext=keys.seal_secret(connection_id, app.id, secret),
            install_nonce=claim.nonce,
            created_at=tx.now,
            connected_at=tx.now,
            active_app_mode=app_mode_key(app.id, claim.mode),
            active_account_mode=account_mode_key(account, claim.mode),
        )
        tx.uow.processor_connections.add(connection)
        tx.uow.apps.replace(_with_flag(app, claim.mode, True))
        return Claimed(connection, created=True)

    return rt.transaction(work)


def _require_own_secret(tx: Tx, keys: ProcessorKeys, account: str, mode: Mode, secret: str) -> None:
    """``state_conflict`` when another App's active connection of this account and mode has this
    very secret: the processor's signatures could not tell the two Apps apart, and the events
    would go to the one connected first without a word to the other. Only a caller holding the
    secret learns that the account is connected; a claim with any other secret learns nothing.

    Checked in the claim's unit of work, not by a unique key: two such claims at the same moment
    may both succeed, and then the routing's rule (the first connected takes each event) still
    records every event in one App only."""
    for other in _active_of_account(tx, account, mode):
        try:
            theirs = keys.open_secret(other)
        except DecryptionError:
            continue  # sealed under a key this server lacks: it verifies nothing here either
        if hmac.compare_digest(theirs.encode("utf-8"), secret.encode("utf-8")):
            raise StateConflict(
                f"Processor account {account} is connected to another App in {mode.value} mode with this"
                " webhook secret, so its events could not tell the two apart; ask the operator",
                param="webhook_secret",
            )


def _with_flag(app: App, mode: Mode, connected: bool) -> App:
    if mode is Mode.LIVE:
        return evolve(app, processor_connected_live=connected)
    return evolve(app, processor_connected_test=connected)


# -- disconnect ------------------------------------------------------------------------------


def disconnect(
    rt: Runtime, principal: Principal, *, app_id: object = None, mode: object = None
) -> ProcessorConnection:
    """End the App's active connection in one mode and destroy its sealed secret.

    Events of that account and mode are refused from now on. A Live revenue source already locked
    to the processor stays locked (decisions 4): API revenue is still refused afterwards.

    ``POST /v1/processor/disconnect``. Errors: ``validation_error`` (``mode``; ``app_id`` with a
    session), ``mode_mismatch``, ``app_not_found``, ``processor_connection_not_found``.
    """
    target_mode = _target_mode(principal, mode)
    target_app = _target_app_id(principal, app_id)

    def work(tx: Tx) -> ProcessorConnection:
        app = require_app(tx, principal, target_app, for_update=True)
        current = _active(tx, app.id, target_mode, for_update=True)
        if current is None:
            raise NotFound(
                f"App {app.id} has no active {target_mode.value} processor connection",
                code="processor_connection_not_found",
            )
        ended = evolve(
            current,
            disconnected_at=tx.now,
            webhook_secret_ciphertext="",
            active_app_mode=None,
            active_account_mode=None,
        )
        tx.uow.processor_connections.replace(ended)
        tx.uow.apps.replace(_with_flag(app, target_mode, False))
        return ended

    return rt.transaction(work)


# -- reads -----------------------------------------------------------------------------------


def get_connection(rt: Runtime, principal: Principal, connection_id: str) -> ProcessorConnection:
    """A processor connection of the caller's App by ID, active or disconnected
    (``GET /v1/processor/connections/:id``); the webhook secret is never part of it. An App key
    reads its own mode's, as it connects and disconnects only its own (a Test key had read the
    Live account's connection); a session reads either.

    Errors: ``processor_connection_not_found`` (also another tenant's), ``mode_mismatch`` (a key
    of the other mode)."""

    def work(tx: Tx) -> ProcessorConnection:
        connection = tx.uow.processor_connections.get(connection_id)
        if connection is None:
            raise NotFound.of("processor_connection", connection_id)
        try:
            require_app(tx, principal, connection.app_id)
        except NotFound:
            raise NotFound.of("processor_connection", connection_id) from None
        if principal.mode is not None and connection.mode is not principal.mode:
            raise ModeMismatch(
                f"{connection_id} is a {connection.mode.value} connection but the key is "
                f"{principal.mode.value} mode",
                param="id",
            )
        return connection

    return rt.read(work)


def list_connections(
    rt: Runtime,
    principal: Principal,
    *,
    app_id: object = None,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[ProcessorConnection]:
    """The App's connections, active and disconnected, newest first: of both modes for a
    session, of its own mode for an App key (a list never mixes what a key may not read).

    ``GET /v1/processor/connections``. Errors: ``validation_error`` (``app_id`` with a session,
    ``limit``), ``app_not_found``, ``invalid_starting_after``."""
    target_app = _target_app_id(principal, app_id)
    where: dict[str, object] = {"app_id": target_app}
    if principal.mode is not None:
        where["mode"] = principal.mode

    def work(tx: Tx) -> Page[ProcessorConnection]:
        require_app(tx, principal, target_app)
        return paginate(
            tx.uow.processor_connections,
            where,
            prefix=CONNECTION_PREFIX,
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def connections_for_account(rt: Runtime, account_id: str, mode: Mode) -> list[ProcessorConnection]:
    """The active connections of a processor account in one mode, the longest connected first;
    none when that account is not connected in that mode (never connected, or disconnected).
    Usually one: more only where several Apps claimed the account (:mod:`refcore.models.processor`),
    and a delivery belongs to the first whose secret verifies it. Their secrets stay sealed until
    a delivery is checked against each in turn (:meth:`ProcessorKeys.open_secret`), so the
    connection that verifies first spares the opening of the others'."""

    found = rt.read(lambda tx: _active_of_account(tx, account_id, mode))
    return sorted(found, key=lambda connection: (connection.connected_at, connection.id))


def represent_connection(connection: ProcessorConnection) -> JsonObject:
    """The connection as the API shows it; the webhook secret never appears."""
    return {
        "id": connection.id,
        "object": "processor_connection",
        "created_at": timestamp(connection.created_at),
        "app_id": connection.app_id,
        "livemode": connection.mode.livemode,
        "mode": connection.mode.value,
        "account_id": connection.account_id,
        "status": "active" if connection.active else "disconnected",
        "connected_at": timestamp(connection.connected_at),
        "disconnected_at": timestamp(connection.disconnected_at),
    }
