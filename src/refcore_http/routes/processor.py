"""The payment-processor connection and the processor's event deliveries (interface 4.7, decisions 4, 11).

Connection management takes a dashboard session (naming ``app_id`` and ``mode``) or an App key
(its own App and mode). The inbound event route is public: a delivery is authenticated by the
processor's ``Stripe-Signature`` header, verified with the webhook secret of the connection its
``account`` and ``livemode`` name. See docs/processor.md for the whole flow and every status.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Literal

from attrs import field, frozen

from refcore.crypto import DecryptionError
from refcore.errors import InvalidSignature, StateConflict
from refcore.models import Mode
from refcore.models.processor import ProcessorConnection
from refcore.representation import represent
from refcore.services import processor_connection as connections
from refcore.services.principal import Scope
from refcore.services.processor_events import apply_changes
from refcore_http.bodies import decode_object
from refcore_http.endpoints import (
    DEVELOPER,
    PAGING,
    PUBLIC,
    Call,
    Endpoint,
    HeaderParam,
    QueryParam,
    Reply,
    ok,
    returns,
    returns_list,
)
from refcore_http.processor.keys import processor_keys
from refcore_http.processor.signature import (
    SIGNATURE_HEADER,
    UNVERIFIED,
    SignatureRefused,
    UnmatchedSignature,
    header_missing,
    signed_at,
    verify_signature,
)
from refcore_http.processor.stripe_events import parse_event, routing_of
from refcore_http.replies import listing

log = logging.getLogger("refcore_http.processor")

_APP_ID = "The App (sessions; an App key acts for its own App)"
_MODE = "test or live (sessions; an App key acts in its own mode)"


@frozen
class ConnectLinkBody:
    """Ask for the processor's install URL for one App and mode."""

    app_id: str | None = field(default=None, metadata={"description": _APP_ID})
    mode: Literal["test", "live"] | None = field(default=None, metadata={"description": _MODE})


@frozen
class ClaimInstallBody:
    """A completed installation: what the processor returned, and the connect link's state."""

    state: str = field(metadata={"description": "The state of the connect link the install started from"})
    account_id: str = field(metadata={"description": "The processor account ID (acct_…)"})
    webhook_secret: str = field(
        metadata={"description": "The installation's webhook signing secret (whsec_…)"}
    )
    app_id: str | None = field(default=None, metadata={"description": "Optional: must be the state's App"})


@frozen
class DisconnectBody:
    """Disconnect the processor from one App in one mode."""

    app_id: str | None = field(default=None, metadata={"description": _APP_ID})
    mode: Literal["test", "live"] | None = field(default=None, metadata={"description": _MODE})


def create_processor_connect_link(call: Call) -> Reply:
    body: ConnectLinkBody = call.body
    base_url = call.settings.processor_connect_url
    if base_url is None:
        raise StateConflict(
            "The processor integration is not configured on this server (REFCORE_PROCESSOR_CONNECT_URL)"
        )
    link = connections.create_connect_link(
        call.runtime,
        call.who,
        processor_keys(call.settings),
        base_url,
        app_id=body.app_id,
        mode=body.mode,
    )
    return ok(link.represent())


def claim_processor_install(call: Call) -> Reply:
    body: ClaimInstallBody = call.body
    claimed = connections.claim_pending_install(
        call.runtime,
        call.who,
        processor_keys(call.settings),
        state=body.state,
        account_id=body.account_id,
        webhook_secret=body.webhook_secret,
        app_id=body.app_id,
    )
    return Reply(
        body=connections.represent_connection(claimed.connection), status=201 if claimed.created else 200
    )


def disconnect_processor(call: Call) -> Reply:
    body: DisconnectBody = call.body
    ended = connections.disconnect(call.runtime, call.who, app_id=body.app_id, mode=body.mode)
    return ok(connections.represent_connection(ended))


def list_processor_connections(call: Call) -> Reply:
    page = connections.list_connections(
        call.runtime,
        call.who,
        app_id=call.query.get("app_id"),
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page, connections.represent_connection)


def get_processor_connection(call: Call) -> Reply:
    connection = connections.get_connection(call.runtime, call.who, call.params["id"])
    return ok(connections.represent_connection(connection))


def _refused(check: str, *, account: str | None = None, mode: Mode | None = None) -> None:
    """Log one WARNING line saying which verification check failed (docs/processor.md).

    The line names the check and, once the body named them, the account and mode; never the
    secret, a signature value or the header as sent. The account is the body's, not yet
    verified: it is logged quoted (``%r``), so that no control character in it forges a line,
    and cut to its first :data:`_LOGGED_ACCOUNT` characters: anyone may send an event, and an
    ``account`` of a whole megabyte had written a megabyte of log a request (233 MB/s from
    eight connections, probe V).
    """
    if account is None or mode is None:
        log.warning("processor event refused: %s", check)
    else:
        if len(account) > _LOGGED_ACCOUNT:
            account = f"{account[:_LOGGED_ACCOUNT]}… ({len(account)} characters)"
        log.warning("processor event refused: %s (account %r, %s)", check, account, mode.value)


#: The most of an unverified ``account`` a refusal's log line shows (processor account IDs are
#: short: ``acct_`` and 16 characters).
_LOGGED_ACCOUNT = 64


def _secrets(
    keys: connections.ProcessorKeys,
    candidates: list[ProcessorConnection],
    failures: list[DecryptionError],
) -> Iterator[str | None]:
    """Each candidate's secret, opened only when the one before did not verify the delivery;
    ``None`` (and the error kept in ``failures``) for one sealed under a key this server lacks,
    which then keeps no other App's connection of the account from verifying (probe AH)."""
    for candidate in candidates:
        try:
            yield keys.open_secret(candidate)
        except DecryptionError as error:
            failures.append(error)
            yield None


def receive_processor_event(call: Call) -> Reply:
    """Verify, then record: nothing in the body is acted on before its signature checks out.

    The body is parsed first only to read ``account`` and ``livemode``, which select the
    connection (and so the secret) the signature must verify with. Every refusal is
    ``invalid_signature`` and logs which check failed (:func:`_refused`).
    """
    header = call.headers.get(SIGNATURE_HEADER)
    if not header:
        missing = header_missing()
        _refused(missing.check)
        raise missing
    try:
        # The header's form before the connection: refused later, a malformed ``t=`` had told
        # whether the account named is connected (its own message only where it is).
        signed_at(header)
    except SignatureRefused as refused:
        _refused(refused.check)
        raise
    values = decode_object(call.raw_body, call.headers.get("content-type"))
    routing = routing_of(values)
    if routing is None:
        _refused("the event names no account and livemode, so no connection")
        raise InvalidSignature("The event names no connected account (account and livemode)")
    account, livemode = routing
    mode = Mode.LIVE if livemode else Mode.TEST
    candidates = connections.connections_for_account(call.runtime, account, mode)
    if not candidates:
        _refused("no active connection of this account in this mode", account=account, mode=mode)
        raise InvalidSignature(UNVERIFIED)
    sealed_elsewhere: list[DecryptionError] = []
    try:
        matching = verify_signature(
            call.raw_body,
            header,
            _secrets(processor_keys(call.settings), candidates, sealed_elsewhere),
            now=call.runtime.clock.now(),
        )
    except UnmatchedSignature as unmatched:
        if sealed_elsewhere:
            # A secret this server cannot open might have verified it: ``500``, logged, as
            # docs/processor.md says of a changed server key, rather than a refusal.
            raise sealed_elsewhere[0] from None
        _refused(unmatched.check, account=account, mode=mode)
        raise
    except SignatureRefused as refused:  # a malformed header, or a stale or future timestamp
        _refused(refused.check, account=account, mode=mode)
        raise
    verifying = candidates[matching]
    event = parse_event(values)
    scope = Scope(app_id=verifying.app_id, mode=verifying.mode)
    recorded = apply_changes(call.runtime, scope, event.changes)
    return ok(
        {
            "object": "processor_event",
            "id": event.id,
            "type": event.type,
            "account": event.account,
            "livemode": event.livemode,
            "handled": event.handled,
            "records": [represent(result.record) for result in recorded],
        }
    )


_TAGS = ("processor",)

ROUTES = (
    Endpoint(
        "POST",
        "/v1/processor/connect-link",
        "Create a processor app install link",
        create_processor_connect_link,
        DEVELOPER,
        returns("ProcessorConnectLink"),
        body=ConnectLinkBody,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/processor/claim-pending-install",
        "Claim a completed installation",
        claim_processor_install,
        DEVELOPER,
        returns("ProcessorConnection", 201, 200),
        body=ClaimInstallBody,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/processor/disconnect",
        "Disconnect processor Test or Live mode",
        disconnect_processor,
        DEVELOPER,
        returns("ProcessorConnection"),
        body=DisconnectBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/processor/connections",
        "List an App's processor connections",
        list_processor_connections,
        DEVELOPER,
        returns_list("ProcessorConnection"),
        query=(QueryParam("app_id", _APP_ID), *PAGING),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/processor/connections/:id",
        "Read a processor connection",
        get_processor_connection,
        DEVELOPER,
        returns("ProcessorConnection"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/processor/events",
        "Receive a processor event delivery (authenticated by its Stripe-Signature header)",
        receive_processor_event,
        PUBLIC,
        returns("ProcessorEvent"),
        raw_body=True,
        headers=(HeaderParam("Stripe-Signature", "t=…,v1=…: the delivery's timestamp and signature."),),
        description=(
            "The processor's own event JSON, signed with the connection's webhook secret in the "
            "Stripe-Signature header (t=…,v1=…; five-minute tolerance). 400 invalid_signature when it "
            "does not verify; 404 payment_not_found for a refund or dispute before its payment (the "
            "processor retries later); 409 for conflicts, as API revenue. See docs/processor.md."
        ),
        tags=_TAGS,
    ),
)
