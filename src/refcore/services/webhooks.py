"""The App's one outgoing webhook endpoint and its delivery history (interface 4.6, decisions 7, 11).

The signing secret ``whsec_…`` exists in plain text only in the return value of the two calls that
create it (:func:`configure_endpoint` when it creates the endpoint, and :func:`rotate_secret`);
the store holds it sealed by a :class:`~refcore.crypto.SecretBox` bound to the App. Removing the
endpoint destroys the sealed secret.

Delivery itself is the HTTP adapter's job (it needs the network); this module only writes the
``webhook.test`` event into the outbox, like every other service writes its events.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import Any

from attrs import evolve, frozen

from refcore.credentials import shown
from refcore.crypto import SecretBox
from refcore.errors import ModeMismatch, NotFound, ValidationError
from refcore.models import Event, EventType, Mode, WebhookDelivery, WebhookEndpoint
from refcore.representation import JsonObject, envelope, timestamp
from refcore.rules.webhook_subscription import SUBSCRIBABLE, subscribed_types
from refcore.rules.webhook_url import require_webhook_url
from refcore.services.access import mode_to_read, require_app
from refcore.services.pagination import Page, paginate
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.validation import require_bool

log = logging.getLogger("refcore.webhooks")

SECRET_PREFIX = "whsec_"
ENDPOINT_PREFIX = "whep"
DELIVERY_PREFIX = "whdl"
_FIELDS = ("url", "events", "disabled")


@frozen
class ConfiguredEndpoint:
    """An endpoint, with its plain secret only when this call created or rotated it."""

    endpoint: WebhookEndpoint
    secret: str | None
    created: bool

    def __repr__(self) -> str:
        shown = "<hidden>" if self.secret is not None else "None"
        return f"ConfiguredEndpoint(endpoint={self.endpoint.id!r}, secret={shown}, created={self.created})"


def new_signing_secret() -> str:
    """A fresh ``whsec_…`` signing secret (256 random bits), shown once and then stored only sealed."""
    return f"{SECRET_PREFIX}{secrets.token_urlsafe(32)}"


def seal_secret(box: SecretBox, app_id: str, secret: str) -> str:
    """``secret`` sealed for storage, bound to ``app_id``: a sealed secret copied into another App's row
    does not open."""
    return box.seal(secret, context=app_id)


def reseal_secret(box: SecretBox, app_id: str, sealed: str) -> str | None:
    """A sealed secret of ``app_id``'s endpoint moved to the box's current key, or ``None`` when it
    is under that key already; ``DecryptionError`` when neither the key nor its fallback opens it
    (``refcore reseal-secrets``)."""
    return box.reseal(sealed, context=app_id)


def signing_secret(box: SecretBox, endpoint: WebhookEndpoint) -> str:
    """The plain secret, for signing a delivery. Raises ``DecryptionError`` under another key."""
    return box.open(endpoint.secret_ciphertext, context=endpoint.app_id)


def parse_events(value: object) -> tuple[str, ...]:
    """A non-empty list of subscribable types, stored in the catalog's order without duplicates.

    Errors: ``validation_error`` (``events``)."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValidationError(
            "events must be a non-empty list of event types; omit it to receive every type",
            param="events",
        )
    known = {t.value for t in SUBSCRIBABLE}
    for name in value:
        if name == EventType.WEBHOOK_TEST.value:
            raise ValidationError(
                "webhook.test cannot be subscribed to; it is sent by POST /v1/apps/:appId/webhook/test",
                param="events",
            )
        if name not in known:
            raise ValidationError(f"unknown event type: {shown(name)}", param="events")
    chosen = set(value)
    return tuple(t.value for t in SUBSCRIBABLE if t.value in chosen)


@frozen
class _Settings:
    url: str
    events: tuple[str, ...]
    disabled: bool


def _parse_settings(values: Mapping[str, Any]) -> _Settings:
    """``PUT`` semantics: the body is the whole configuration; what is omitted takes its default."""
    for name in values:
        if name not in _FIELDS:
            raise ValidationError(f"unknown field: {shown(str(name))}", param=shown(str(name)))
    if "url" not in values:
        raise ValidationError("url is required", param="url")
    url = require_webhook_url(values["url"])
    events = () if values.get("events") is None else parse_events(values["events"])
    disabled = False if values.get("disabled") is None else require_bool(values["disabled"], param="disabled")
    return _Settings(url=url, events=events, disabled=disabled)


def _current(tx: Tx, app_id: str, *, for_update: bool = False) -> WebhookEndpoint | None:
    endpoint = tx.uow.webhook_endpoints.find_one({"app_id": app_id}, for_update=for_update)
    return None if endpoint is None or endpoint.deleted_at is not None else endpoint


def _require_current(tx: Tx, app_id: str, *, for_update: bool = False) -> WebhookEndpoint:
    endpoint = _current(tx, app_id, for_update=for_update)
    if endpoint is None:
        raise NotFound(f"App {app_id} has no webhook endpoint", code="webhook_endpoint_not_found")
    return endpoint


def configure_endpoint(
    rt: Runtime, principal: Principal, box: SecretBox, app_id: str, values: Mapping[str, Any]
) -> ConfiguredEndpoint:
    """Create the App's endpoint (revealing its new secret once) or replace its settings.

    ``PUT /v1/apps/:appId/webhook``. Errors: ``validation_error`` (``url``, ``events``, ``disabled``, an
    unknown field), ``app_not_found``."""
    settings = _parse_settings(values)

    def work(tx: Tx) -> ConfiguredEndpoint:
        require_app(tx, principal, app_id)
        stored = tx.uow.webhook_endpoints.find_one({"app_id": app_id}, for_update=True)
        if stored is not None and stored.deleted_at is None:
            endpoint = evolve(
                stored,
                url=settings.url,
                events=settings.events,
                disabled=settings.disabled,
                updated_at=tx.now,
            )
            tx.uow.webhook_endpoints.replace(endpoint)
            return ConfiguredEndpoint(endpoint=endpoint, secret=None, created=False)
        secret = new_signing_secret()
        endpoint = WebhookEndpoint(
            id=stored.id if stored is not None else tx.new_id(ENDPOINT_PREFIX),
            app_id=app_id,
            url=settings.url,
            events=settings.events,
            disabled=settings.disabled,
            secret_ciphertext=seal_secret(box, app_id, secret),
            created_at=tx.now,
            updated_at=tx.now,
        )
        if stored is None:
            tx.uow.webhook_endpoints.add(endpoint)
        else:
            tx.uow.webhook_endpoints.replace(endpoint)
        return ConfiguredEndpoint(endpoint=endpoint, secret=secret, created=True)

    configured = rt.transaction(work)
    if not configured.created:
        return configured
    try:
        stamped = _stamped_after_commit(rt, configured.endpoint)
    except Exception as exc:
        # The endpoint exists, and this answer is the only one that will ever show its secret:
        # an error now would leave the App with a secret nobody has (probe Y). Unstamped, its
        # created_at is its first transaction's start, as before the stamp existed.
        log.warning(
            "Webhook endpoint %s of App %s created, but its created_at not stamped after the commit"
            " (%s): events of writes that overlapped its creation may be closed unsent",
            configured.endpoint.id,
            app_id,
            type(exc).__name__,
        )
        return configured
    return evolve(configured, endpoint=stamped)


def _stamped_after_commit(rt: Runtime, created: WebhookEndpoint) -> WebhookEndpoint:
    """The new endpoint with its ``created_at`` taken again, in a transaction after the one that
    created it committed.

    An endpoint takes the events created at or after its ``created_at``
    (:func:`~refcore.rules.webhook_subscription.takes`), and the server judges each event as it
    is written, against the endpoint its write reads (``Tx._closed_at``). The first
    transaction's ``now`` is its start: a payment that began between that start and the commit,
    on another connection of PostgreSQL, had a later ``created_at`` but read no endpoint, so its
    events were written closed and never sent (probe X: 16 events in 100 creations, from two
    server processes). Stamped after the commit, an event created at or after ``created_at``
    began after the endpoint was visible, and its write finds it. An event whose write found the
    endpoint before the stamp waits in the outbox and is judged at its attempt against the
    stamped ``created_at``. (Server processes on several machines rely on their clocks agreeing,
    as every comparison of ``created_at`` does.)"""

    def stamp(tx: Tx) -> WebhookEndpoint:
        stored = tx.uow.webhook_endpoints.get(created.id, for_update=True)
        if stored is None or stored.created_at != created.created_at or stored.deleted_at is not None:
            return created  # removed, or made anew, meanwhile: that transaction's stamp stands
        stamped = evolve(stored, created_at=tx.now, updated_at=max(stored.updated_at, tx.now))
        tx.uow.webhook_endpoints.replace(stamped)
        return stamped

    return rt.transaction(stamp)


def get_endpoint(rt: Runtime, principal: Principal, app_id: str) -> WebhookEndpoint:
    """The App's webhook endpoint (``GET /v1/apps/:appId/webhook``), its secret only sealed
    (:func:`represent_endpoint` shows none of it).

    Errors: ``app_not_found``, ``webhook_endpoint_not_found`` (none configured, or removed)."""

    def work(tx: Tx) -> WebhookEndpoint:
        require_app(tx, principal, app_id)
        return _require_current(tx, app_id)

    return rt.read(work)


def remove_endpoint(rt: Runtime, principal: Principal, app_id: str) -> WebhookEndpoint:
    """Stop all delivery and destroy the sealed secret; the history of deliveries stays readable.

    ``DELETE /v1/apps/:appId/webhook``. Errors: ``app_not_found``, ``webhook_endpoint_not_found``."""

    def work(tx: Tx) -> WebhookEndpoint:
        require_app(tx, principal, app_id)
        endpoint = evolve(
            _require_current(tx, app_id, for_update=True),
            secret_ciphertext="",
            deleted_at=tx.now,
            updated_at=tx.now,
        )
        tx.uow.webhook_endpoints.replace(endpoint)
        return endpoint

    return rt.transaction(work)


def rotate_secret(rt: Runtime, principal: Principal, box: SecretBox, app_id: str) -> ConfiguredEndpoint:
    """A new secret, effective for every delivery signed from now on; the old one stops at once.

    ``POST /v1/apps/:appId/webhook/rotate-secret``. Errors: ``app_not_found``,
    ``webhook_endpoint_not_found``."""

    def work(tx: Tx) -> ConfiguredEndpoint:
        require_app(tx, principal, app_id)
        secret = new_signing_secret()
        endpoint = evolve(
            _require_current(tx, app_id, for_update=True),
            secret_ciphertext=seal_secret(box, app_id, secret),
            updated_at=tx.now,
        )
        tx.uow.webhook_endpoints.replace(endpoint)
        return ConfiguredEndpoint(endpoint=endpoint, secret=secret, created=False)

    return rt.transaction(work)


def send_test_event(rt: Runtime, principal: Principal, app_id: str) -> Event:
    """Write one ``webhook.test`` event to the outbox; the dispatcher delivers it after commit.

    Its ``data`` is the endpoint as ``GET`` shows it. It is ``livemode: false`` (decisions 11) and
    is sent even when the endpoint is disabled, so an endpoint can be tried before it is enabled.

    ``POST /v1/apps/:appId/webhook/test``. Errors: ``app_not_found``, ``webhook_endpoint_not_found``.
    """

    def work(tx: Tx) -> Event:
        require_app(tx, principal, app_id)
        endpoint = _require_current(tx, app_id)
        return tx.emit(
            EventType.WEBHOOK_TEST,
            app_id=app_id,
            livemode=False,
            data=represent_endpoint(endpoint),
        )

    return rt.transaction(work)


#: The delivery field that says whether a mode's history lists a delivery.
_LISTED_IN = {Mode.TEST: "listed_in_test", Mode.LIVE: "listed_in_live"}


def listed_in(event: Event, mode: Mode) -> bool:
    """Whether ``mode``'s delivery history lists the delivery of ``event``.

    A delivery tells of its event (ID, type, timing, what the receiver answered), so it belongs
    to the event's mode, as the event's activity does (probe J: a Test key read the deliveries of
    Live payments). ``webhook.test`` is the exception, listed in both: either mode's key may ask
    for it, and it carries only the endpoint's configuration, which both modes share."""
    if event.type is EventType.WEBHOOK_TEST:
        return True
    return event.livemode is (mode is Mode.LIVE)


def list_deliveries(
    rt: Runtime,
    principal: Principal,
    app_id: str,
    *,
    environment: object = None,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[WebhookDelivery]:
    """The App's delivery records of one mode, newest first (they outlive a removed endpoint).

    App keys read their own mode's; sessions choose it with ``environment`` (default ``live``),
    as they do for activity. The mode is part of the store's query, so pages and ``has_more``
    count only that mode's records, and a cursor from the other mode's history is refused.

    ``GET /v1/apps/:appId/webhook/deliveries``. Errors: ``app_not_found``, ``validation_error``
    (``environment``, ``limit``), ``mode_mismatch`` (a key naming the other mode),
    ``invalid_starting_after``."""

    def work(tx: Tx) -> Page[WebhookDelivery]:
        mode = mode_to_read(principal, environment)
        require_app(tx, principal, app_id)
        return paginate(
            tx.uow.webhook_deliveries,
            {"app_id": app_id, _LISTED_IN[mode]: True},
            prefix=DELIVERY_PREFIX,
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def get_delivery(rt: Runtime, principal: Principal, app_id: str, delivery_id: str) -> WebhookDelivery:
    """One delivery attempt of the App's events (``GET /v1/apps/:appId/webhook/deliveries/:deliveryId``).

    An App key reads its own mode's; one of the other mode is ``409 mode_mismatch``, as an
    activity ID of the other mode is. A session reads either mode's, as it reads activity by ID.

    Errors: ``app_not_found``, ``webhook_delivery_not_found``, ``mode_mismatch``."""

    def work(tx: Tx) -> WebhookDelivery:
        require_app(tx, principal, app_id)
        delivery = tx.uow.webhook_deliveries.get(delivery_id)
        if delivery is None or delivery.app_id != app_id:
            raise NotFound.of("webhook_delivery", delivery_id)
        if principal.is_app_key and principal.mode is not None:
            _require_listed(delivery, principal.mode)
        return delivery

    return rt.read(work)


def _require_listed(delivery: WebhookDelivery, mode: Mode) -> None:
    """Errors: ``mode_mismatch`` (``deliveryId``) when ``mode``'s history does not list ``delivery``."""
    if not getattr(delivery, _LISTED_IN[mode]):
        raise ModeMismatch(
            f"{delivery.id} is a delivery of the other mode's event but this request is in {mode.value} mode",
            param="deliveryId",
        )


# -- public representation -------------------------------------------------------------------


def represent_endpoint(endpoint: WebhookEndpoint, *, secret: str | None = None) -> JsonObject:
    """The endpoint as the API shows it; ``secret`` only in the create and rotate responses.

    ``events`` is the effective selection: every subscribable type when none was chosen.
    """
    shown: JsonObject = {
        "id": endpoint.id,
        "object": "webhook_endpoint",
        "created_at": timestamp(endpoint.created_at),
        "app_id": endpoint.app_id,
        "url": endpoint.url,
        "events": list(subscribed_types(endpoint)),
        "disabled": endpoint.disabled,
        "updated_at": timestamp(endpoint.updated_at),
    }
    if endpoint.deleted_at is not None:
        shown["deleted"] = True
    if secret is not None:
        shown["secret"] = secret
    return shown


def represent_delivery(delivery: WebhookDelivery) -> JsonObject:
    """A delivery attempt as the API shows it: the event it carried, its outcome (``status``,
    ``http_status``, ``duration_ms``, ``error``) and what the receiver answered. ``livemode`` is
    its event's, as on every other object of one mode (probe N: a record of a mode's history
    did not say which): a ``webhook.test`` delivery, listed in both histories, is ``false``."""
    return {
        "id": delivery.id,
        "object": "webhook_delivery",
        "created_at": timestamp(delivery.created_at),
        "livemode": delivery.listed_in_live and not delivery.listed_in_test,
        "app_id": delivery.app_id,
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "url": delivery.url,
        "status": delivery.status.value,
        "http_status": delivery.http_status,
        "duration_ms": delivery.duration_ms,
        "error": delivery.error,
        "response_body": delivery.response_body,
    }


def represent_event(event: Event) -> JsonObject:
    """An event as an API object: the envelope of interface 2.9 plus ``object``."""
    body = envelope(event)
    return {"id": body.pop("id"), "object": "event", **body}
