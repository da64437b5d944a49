"""Tracking: capture, identify, and reading clicks, customers and referrals (interface 2.4, 2.5, 4.1)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from attrs import field, frozen

from refcore.representation import represent
from refcore.services import activity
from refcore.services.access import activity_scope
from refcore.services.tracking import (
    Caller,
    Credential,
    IdentifyRequest,
    PendingCapture,
    check_capture_fields,
    identify,
    reject_public_visitor_fields,
)
from refcore_http.capture_batches import CaptureBatches
from refcore_http.endpoints import (
    APP_ID,
    APP_KEY,
    DEVELOPER,
    ENVIRONMENT,
    NO_CONTENT,
    PAGING,
    PUBLIC,
    PUBLIC_OR_APP_KEY,
    Call,
    Endpoint,
    Reply,
    Visitor,
    created,
    filter_param,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import activity_query, by_path_id, listing


@frozen
class CaptureBody:
    """A landing on an affiliate link (interface 2.4)."""

    via: str = field(metadata={"description": "The link code from the via query parameter"})
    page: str | None = field(default=None, metadata={"description": "The landing page URL"})
    referrer: str | None = field(default=None, metadata={"description": "The referring page URL"})
    visitor_ip: str | None = field(
        default=None, metadata={"description": "Server capture with a key only; public capture: 400"}
    )
    visitor_user_agent: str | None = field(
        default=None, metadata={"description": "Server capture with a key only; public capture: 400"}
    )


@frozen
class IdentifyBody:
    """A new Customer account of the App (interface 2.5)."""

    click_id: str | None = field(default=None, metadata={"description": "Required for ordinary App keys"})
    external_customer_id: str | None = None
    email: str | None = None
    promotion_code: str | None = field(default=None, metadata={"description": "Managed revenue keys only"})
    program_id: str | None = field(default=None, metadata={"description": "Sent with promotion_code"})
    program_affiliate_id: str | None = field(
        default=None, metadata={"description": "Sent with promotion_code"}
    )


async def capture_click(call: Call) -> Reply:
    """Public (no key): a Live click, visitor from the connection. With a key: the key's App and mode.

    Runs on the event loop: the capture waits there to be recorded with the others arriving at
    the same time (:mod:`refcore_http.capture_batches`), and a server capture's key is
    authenticated with that batch (``authenticates_itself``)."""
    body: CaptureBody = call.body
    if call.credential is None and call.principal is None:
        reject_public_visitor_fields(dict.fromkeys(call.sent))
        public = _public_capture(body.via, body.page, body.referrer, call.visitor)
        return await _recorded(call.capture_batches, public)
    caller: Caller = Credential(call.credential) if call.credential is not None else activity_scope(call.who)
    pending = check_capture_fields(
        body.via, body.page, body.referrer, body.visitor_ip, body.visitor_user_agent, caller=caller
    )
    return await _recorded(call.capture_batches, pending)


#: What a browser's capture sends; a visitor field or any other is the pipeline's to refuse.
_BROWSER_FIELDS = frozenset({"via", "page", "referrer"})


def browser_capture(
    body: dict[str, Any], visitor: Visitor, batches: CaptureBatches
) -> Awaitable[Reply] | None:
    """A public capture past the pipeline (``Endpoint.shortcut``), for the body every browser
    sends: ``via``, and ``page`` and ``referrer`` as strings or ``null``. That is exactly what
    :class:`CaptureBody` structures without changing a value, so what follows is
    :func:`capture_click`'s public branch. Any other body is ``None``: the pipeline names
    what is wrong with it."""
    via = body.get("via")
    page = body.get("page")
    referrer = body.get("referrer")
    if (
        type(via) is not str
        or (page is not None and type(page) is not str)
        or (referrer is not None and type(referrer) is not str)
        or not body.keys() <= _BROWSER_FIELDS
    ):
        return None
    return _recorded(batches, _public_capture(via, page, referrer, visitor))


def _public_capture(via: object, page: object, referrer: object, visitor: Visitor) -> PendingCapture:
    """A public capture: the visitor comes from the connection, never from the body."""
    return check_capture_fields(via, page, referrer, visitor.ip, visitor.user_agent, caller=None)


async def _recorded(batches: CaptureBatches, capture: PendingCapture) -> Reply:
    """The capture's answer, once its batch is committed."""
    click = await batches.record(capture)
    return created({"click_id": click.id, "livemode": click.mode.livemode})


def capture_preflight(call: Call) -> Reply:
    """CORS preflight of browsers; the dispatcher adds the Access-Control headers."""
    return Reply(body=None, status=204)


def identify_customer(call: Call) -> Reply:
    body: IdentifyBody = call.body
    request = IdentifyRequest(
        click_id=body.click_id,
        external_customer_id=body.external_customer_id,
        email=body.email,
        promotion_code=body.promotion_code,
        program_id=body.program_id,
        program_affiliate_id=body.program_affiliate_id,
    )
    identified = identify(call.runtime, call.who, activity_scope(call.who), request)
    return Reply(body=identified.response(), status=201 if identified.created else 200)


def list_clicks(call: Call) -> Reply:
    return listing(activity.list_clicks(call.runtime, call.who, activity_query(call)))


def get_click(call: Call) -> Reply:
    return ok(represent(by_path_id(call, activity.get_click)))


def list_customers(call: Call) -> Reply:
    return listing(activity.list_customers(call.runtime, call.who, activity_query(call)))


def get_customer(call: Call) -> Reply:
    return ok(represent(by_path_id(call, activity.get_customer)))


def list_referrals(call: Call) -> Reply:
    return listing(activity.list_referrals(call.runtime, call.who, activity_query(call)))


def get_referral(call: Call) -> Reply:
    return ok(represent(by_path_id(call, activity.get_referral)))


_PROGRAM = filter_param("program_id", "Only this program's objects (sessions: also names the App)")
_AFFILIATE = filter_param("program_affiliate_id", "Only this program affiliate's objects")
_TAGS = ("tracking",)

ROUTES = (
    Endpoint(
        "POST",
        "/v1/capture",
        "Record a click on an affiliate link",
        capture_click,
        PUBLIC_OR_APP_KEY,
        returns("Capture", 201),
        body=CaptureBody,
        cors=True,
        tags=_TAGS,
        description="Without a key (browsers): a Live click; the visitor's IP and user agent come "
        "from the request, never from the body.",
        authenticates_itself=True,
        shortcut=browser_capture,
    ),
    Endpoint(
        "OPTIONS",
        "/v1/capture",
        "CORS preflight for browser capture",
        capture_preflight,
        PUBLIC,
        NO_CONTENT,
        cors=True,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/identify",
        "Create or find a Customer and its Referral",
        identify_customer,
        APP_KEY,
        returns("Identify", 201, 200),
        body=IdentifyBody,
        tags=_TAGS,
        batched=True,
    ),
    Endpoint(
        "GET",
        "/v1/clicks",
        "List clicks",
        list_clicks,
        DEVELOPER,
        returns_list("Click"),
        query=(
            APP_ID,
            ENVIRONMENT,
            _PROGRAM,
            _AFFILIATE,
            filter_param("link_id", "Only clicks on this link"),
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint("GET", "/v1/clicks/:id", "Read a click", get_click, DEVELOPER, returns("Click"), tags=_TAGS),
    Endpoint(
        "GET",
        "/v1/customers",
        "List customers",
        list_customers,
        DEVELOPER,
        returns_list("Customer"),
        query=(
            APP_ID,
            ENVIRONMENT,
            filter_param("external_customer_id", "Only the customer with this App identifier"),
            filter_param("email", "Only customers with this exact e-mail"),
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/customers/:id",
        "Read a customer",
        get_customer,
        DEVELOPER,
        returns("Customer"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/referrals",
        "List referrals",
        list_referrals,
        DEVELOPER,
        returns_list("Referral"),
        query=(
            APP_ID,
            ENVIRONMENT,
            _PROGRAM,
            _AFFILIATE,
            filter_param("customer_id", "Only this customer's referral"),
            filter_param("click_id", "Only referrals attributed to this click"),
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/referrals/:id",
        "Read a referral",
        get_referral,
        DEVELOPER,
        returns("Referral"),
        tags=_TAGS,
    ),
)
