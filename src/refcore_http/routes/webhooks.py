"""The App's outgoing webhook endpoint and its delivery history (interface 4.6, decisions 11).

The signing secret appears in exactly two responses: the ``PUT`` that creates the endpoint
(``201``) and ``rotate-secret``. ``POST …/webhook/test`` only queues a ``webhook.test`` event
(``202``): the dispatcher delivers it after commit, like every event, and its outcome appears in
the delivery history.
"""

from __future__ import annotations

from attrs import field, frozen

from refcore.services import webhooks
from refcore_http.endpoints import (
    DEVELOPER,
    ENVIRONMENT,
    NO_STORE,
    PAGING,
    Call,
    Endpoint,
    Output,
    Reply,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import listing
from refcore_http.webhooks.keys import secret_box


@frozen
class WebhookEndpointBody:
    """The whole endpoint configuration (PUT): what is omitted takes its default."""

    url: str = field(metadata={"description": "An https:// URL", "format": "uri"})
    events: list[str] | None = field(
        default=None,
        metadata={"description": "Event types to receive; omitted or null: every subscribable type"},
    )
    disabled: bool | None = field(
        default=None,
        metadata={"description": "true stops delivery without removing the endpoint; omitted or null: false"},
    )


def configure_webhook_endpoint(call: Call) -> Reply:
    body: WebhookEndpointBody = call.body
    values = {name: getattr(body, name) for name in call.sent}
    result = webhooks.configure_endpoint(
        call.runtime, call.who, secret_box(call.settings), call.params["appId"], values
    )
    shown = webhooks.represent_endpoint(result.endpoint, secret=result.secret)
    return Reply(body=shown, status=201 if result.created else 200, headers=NO_STORE if result.secret else ())


def get_webhook_endpoint(call: Call) -> Reply:
    endpoint = webhooks.get_endpoint(call.runtime, call.who, call.params["appId"])
    return ok(webhooks.represent_endpoint(endpoint))


def remove_webhook_endpoint(call: Call) -> Reply:
    endpoint = webhooks.remove_endpoint(call.runtime, call.who, call.params["appId"])
    return ok(webhooks.represent_endpoint(endpoint))


def rotate_webhook_secret(call: Call) -> Reply:
    result = webhooks.rotate_secret(call.runtime, call.who, secret_box(call.settings), call.params["appId"])
    return ok(webhooks.represent_endpoint(result.endpoint, secret=result.secret), headers=NO_STORE)


def send_webhook_test(call: Call) -> Reply:
    event = webhooks.send_test_event(call.runtime, call.who, call.params["appId"])
    return Reply(body=webhooks.represent_event(event), status=202)


def list_webhook_deliveries(call: Call) -> Reply:
    page = webhooks.list_deliveries(
        call.runtime,
        call.who,
        call.params["appId"],
        environment=call.query.get("environment"),
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page, webhooks.represent_delivery)


def get_webhook_delivery(call: Call) -> Reply:
    delivery = webhooks.get_delivery(call.runtime, call.who, call.params["appId"], call.params["deliveryId"])
    return ok(webhooks.represent_delivery(delivery))


_TAGS = ("webhooks",)
_PATH = "/v1/apps/:appId/webhook"

ROUTES = (
    Endpoint(
        "GET",
        _PATH,
        "Read the App's webhook endpoint (never its secret)",
        get_webhook_endpoint,
        DEVELOPER,
        returns("WebhookEndpoint"),
        tags=_TAGS,
    ),
    Endpoint(
        "PUT",
        _PATH,
        "Configure the App's webhook endpoint",
        configure_webhook_endpoint,
        DEVELOPER,
        Output(
            schema="WebhookEndpoint",
            statuses=(200, 201),
            schemas=((201, "WebhookEndpointWithSecret"),),
        ),
        body=WebhookEndpointBody,
        description="201 with the signing secret `secret` (shown this once) when this creates the "
        "endpoint; 200 without it when it replaces the configuration of an existing one.",
        tags=_TAGS,
    ),
    Endpoint(
        "DELETE",
        _PATH,
        "Remove the App's webhook endpoint and destroy its secret",
        remove_webhook_endpoint,
        DEVELOPER,
        returns("DeletedWebhookEndpoint"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        f"{_PATH}/rotate-secret",
        "Replace the signing secret (shown this once)",
        rotate_webhook_secret,
        DEVELOPER,
        returns("WebhookEndpointWithSecret"),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        f"{_PATH}/test",
        "Queue one webhook.test event for the endpoint",
        send_webhook_test,
        DEVELOPER,
        returns("Event", 202),
        description="The attempt happens after the response; its outcome is in the delivery history.",
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        f"{_PATH}/deliveries",
        "List delivery attempts of one mode's events, newest first",
        list_webhook_deliveries,
        DEVELOPER,
        returns_list("WebhookDelivery"),
        query=(ENVIRONMENT, *PAGING),
        description="An App key lists the deliveries of its own mode's events, a session those of "
        "`environment` (default live); `webhook.test` deliveries are listed in both modes.",
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        f"{_PATH}/deliveries/:deliveryId",
        "Read one delivery attempt",
        get_webhook_delivery,
        DEVELOPER,
        returns("WebhookDelivery"),
        description="A delivery of the other mode's event is 409 mode_mismatch for an App key; "
        "a session reads either mode's.",
        tags=_TAGS,
    ),
)
