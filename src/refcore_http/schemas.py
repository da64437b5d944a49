"""JSON Schemas of what the API sends and receives, for the OpenAPI document.

Response objects are described here once, by the fields :mod:`refcore.representation` gives them
(decisions 10); they allow additional properties, since more fields are welcome, but every field
named here is required, so a representation that drops or retypes one contradicts the document
(the property-based API test checks every response against it). Because they are open, that test
cannot see a field the server sends and the document forgets: ``tests/http/test_openapi_responses.py``
reads them closed against a walk that reaches every response schema. Request bodies are not described
by hand: their schemas are derived from the attrs request classes that the dispatcher structures
bodies into (:func:`body_schema`), so the document cannot drift from what the server accepts.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from refcore.representation import JsonObject

STRING: JsonObject = {"type": "string"}
INTEGER: JsonObject = {"type": "integer"}
BOOLEAN: JsonObject = {"type": "boolean"}
TIMESTAMP: JsonObject = {"type": "string", "format": "date-time"}


def nullable(schema: JsonObject) -> JsonObject:
    return {"anyOf": [schema, {"type": "null"}]}


def enum(*values: str) -> JsonObject:
    return {"type": "string", "enum": list(values)}


def ref(name: str) -> JsonObject:
    return {"$ref": f"#/components/schemas/{name}"}


def shape(properties: dict[str, JsonObject], *, closed: bool = False) -> JsonObject:
    return {
        "type": "object",
        "required": sorted(properties),
        "properties": properties,
        "additionalProperties": not closed,
    }


def resource(object_type: str, *, activity: bool = False, **fields: JsonObject) -> JsonObject:
    """An API object: ``id``, ``object``, ``created_at`` (and ``livemode`` for activity)."""
    base: dict[str, JsonObject] = {
        "id": STRING,
        "object": {"const": object_type},
        "created_at": TIMESTAMP,
    }
    if activity:
        base["livemode"] = BOOLEAN
    return shape({**base, **fields})


COMMISSION_TERMS: JsonObject = {
    "oneOf": [
        shape({"type": {"const": "percent"}, "bps": INTEGER}, closed=True),
        shape({"type": {"const": "fixed"}, "amount": INTEGER}, closed=True),
    ]
}

ERROR: JsonObject = shape(
    {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": STRING, "message": STRING, "param": STRING},
            "additionalProperties": False,
        }
    },
    closed=True,
)

#: Every object a successful call may answer, by schema name.
OBJECTS: dict[str, JsonObject] = {
    "Error": ERROR,
    "Index": shape(
        {
            "object": {"const": "index"},
            "version": STRING,
            "endpoints": {
                "type": "array",
                "items": shape({"method": STRING, "path": STRING, "auth": STRING, "summary": STRING}),
            },
        }
    ),
    "Health": shape({"object": {"const": "health"}, "store": {"const": "ok"}}),
    "OpenApiDocument": shape(
        {
            "openapi": STRING,
            "info": {"type": "object"},
            "paths": {"type": "object"},
            "components": {"type": "object"},
        }
    ),
    "Organization": resource("organization", name=STRING),
    "App": resource(
        "app",
        organization_id=STRING,
        name=STRING,
        live_revenue_source=nullable(enum("api", "processor")),
    ),
    "ApiKey": resource(
        "api_key",
        app_id=STRING,
        kind=enum("app", "managed_revenue", "affiliate"),
        mode=enum("test", "live"),
        last4=STRING,
        revoked_at=nullable(TIMESTAMP),
        # an affiliate key's program affiliate; null for App and managed revenue keys
        program_affiliate_id=nullable(STRING),
    ),
    "IssuedApiKey": resource(
        "api_key",
        app_id=STRING,
        kind=enum("app", "managed_revenue"),
        mode=enum("test", "live"),
        last4=STRING,
        revoked_at=nullable(TIMESTAMP),
        program_affiliate_id={"type": "null"},
        secret=STRING,
    ),
    "Program": resource(
        "program",
        app_id=STRING,
        name=STRING,
        slug=STRING,
        currency=STRING,
        commission=COMMISSION_TERMS,
        commission_duration_months=nullable(INTEGER),
        attribution_window_days=INTEGER,
        hold_days=INTEGER,
        minimum_payout=INTEGER,
        auto_approve=BOOLEAN,
        promotion_code_fallback=BOOLEAN,
        status=enum("active", "paused", "disabled"),
    ),
    "ProgramTerms": resource("program_terms", program_id=STRING, text=STRING),
    "ProgramTermsHistory": shape(
        {
            "object": {"const": "program_terms_history"},
            "program_id": STRING,
            "current": nullable(ref("ProgramTerms")),
            "history": {"type": "array", "items": ref("ProgramTerms")},
            "has_more": BOOLEAN,
        }
    ),
    "ProgramAffiliate": resource(
        "program_affiliate",
        program_id=STRING,
        email=STRING,
        name=STRING,
        status=enum("pending", "active", "disabled"),
    ),
    "Link": resource(
        "link", program_affiliate_id=STRING, program_id=STRING, code=STRING, name=nullable(STRING)
    ),
    "DeletedLink": resource(
        "link",
        program_affiliate_id=STRING,
        program_id=STRING,
        code=STRING,
        name=nullable(STRING),
        deleted={"const": True},
    ),
    "Capture": shape({"click_id": STRING, "livemode": BOOLEAN}),
    "Identify": shape(
        {
            "customer_id": STRING,
            "referral_id": STRING,
            "program_id": STRING,
            "click_id": nullable(STRING),
            "attribution_source": nullable(STRING),
            "attributed": BOOLEAN,
            "livemode": BOOLEAN,
            "processor_metadata": shape(
                {
                    "service_click_id": nullable(STRING),
                    "service_customer_id": STRING,
                    "service_program_id": STRING,
                }
            ),
        }
    ),
    "Click": resource(
        "click",
        activity=True,
        program_id=STRING,
        program_affiliate_id=STRING,
        link_id=STRING,
        page=nullable(STRING),
        referrer=nullable(STRING),
    ),
    "Customer": resource(
        "customer", activity=True, external_customer_id=nullable(STRING), email=nullable(STRING)
    ),
    "Referral": resource(
        "referral",
        activity=True,
        customer_id=STRING,
        program_id=STRING,
        program_affiliate_id=nullable(STRING),
        click_id=nullable(STRING),
        attributed=BOOLEAN,
        attribution_source=nullable(STRING),
    ),
    "Transaction": resource(
        "transaction",
        activity=True,
        type={"const": "payment"},
        payment_id=STRING,
        # null for a processor payment without identify metadata (docs/processor.md)
        customer_id=nullable(STRING),
        program_id=nullable(STRING),
        program_affiliate_id=nullable(STRING),
        amount=INTEGER,
        currency=STRING,
        attributed=BOOLEAN,
        refunded_amount=INTEGER,
        disputed_amount=INTEGER,
        commission_amount=INTEGER,
        source=enum("api", "processor"),
    ),
    "Refund": resource(
        "refund", activity=True, refund_id=STRING, payment_id=STRING, transaction_id=STRING, amount=INTEGER
    ),
    "Dispute": resource(
        "dispute",
        activity=True,
        dispute_id=STRING,
        payment_id=STRING,
        transaction_id=STRING,
        status=enum("opened", "won", "withdrawn", "lost", "funds_reinstated"),
        amount=INTEGER,
        inquiry=BOOLEAN,
        updated_at=TIMESTAMP,
    ),
    "PaymentOrRefund": {"anyOf": [ref("Transaction"), ref("Refund")]},
    "CommissionEntry": resource(
        "commission_entry",
        activity=True,
        program_affiliate_id=STRING,
        program_id=STRING,
        transaction_id=STRING,
        source_id=STRING,
        kind=enum("earned", "reversal", "reinstatement"),
        amount=INTEGER,
        currency=STRING,
        status=STRING,
        available_at=TIMESTAMP,
    ),
    # -- outgoing webhooks (interface 4.6, decisions 11) ---------------------------------------
    "WebhookEndpoint": resource(
        "webhook_endpoint",
        app_id=STRING,
        url=STRING,
        events={"type": "array", "items": STRING},
        disabled=BOOLEAN,
        updated_at=TIMESTAMP,
    ),
    "WebhookEndpointWithSecret": resource(
        "webhook_endpoint",
        app_id=STRING,
        url=STRING,
        events={"type": "array", "items": STRING},
        disabled=BOOLEAN,
        updated_at=TIMESTAMP,
        secret={"type": "string", "pattern": "^whsec_"},
    ),
    "DeletedWebhookEndpoint": resource(
        "webhook_endpoint",
        app_id=STRING,
        url=STRING,
        events={"type": "array", "items": STRING},
        disabled=BOOLEAN,
        updated_at=TIMESTAMP,
        deleted={"const": True},
    ),
    "WebhookDelivery": resource(
        "webhook_delivery",
        livemode=BOOLEAN,
        app_id=STRING,
        event_id=STRING,
        event_type=STRING,
        url=STRING,
        status=enum("succeeded", "failed"),
        http_status=nullable(INTEGER),
        duration_ms=INTEGER,
        error=nullable(STRING),
        response_body=nullable(STRING),
    ),
    "Event": resource(
        "event",
        type=STRING,
        livemode=BOOLEAN,
        app_id=STRING,
        data={"type": "object"},
    ),
    # -- payment-processor connection (interface 4.7, docs/processor.md) -----------------------
    "ProcessorConnectLink": shape(
        {
            "object": {"const": "processor_connect_link"},
            "url": STRING,
            "state": STRING,
            "app_id": STRING,
            "livemode": BOOLEAN,
            "mode": enum("test", "live"),
            "expires_at": TIMESTAMP,
        }
    ),
    "ProcessorConnection": resource(
        "processor_connection",
        activity=True,
        app_id=STRING,
        mode=enum("test", "live"),
        account_id=STRING,
        status=enum("active", "disconnected"),
        connected_at=TIMESTAMP,
        disconnected_at=nullable(TIMESTAMP),
    ),
    "ProcessorEvent": shape(
        {
            "object": {"const": "processor_event"},
            "id": STRING,
            "type": STRING,
            "account": STRING,
            "livemode": BOOLEAN,
            "handled": BOOLEAN,
            "records": {"type": "array", "items": {"type": "object"}},
        }
    ),
}


def list_of(name: str) -> JsonObject:
    return shape(
        {
            "object": {"const": "list"},
            "data": {"type": "array", "items": ref(name)},
            "has_more": BOOLEAN,
        }
    )


# -- request bodies from attrs classes ---------------------------------------------------------

#: Field metadata keys copied into the schema (constraints the core enforces identically).
SCHEMA_KEYWORDS = ("description", "minimum", "maximum", "minLength", "maxLength", "format", "pattern")
#: Field metadata marking a PATCH field, ``field(default=None, metadata=PATCH)``: it may be left
#: out ("leave as is"), but ``null`` is not a value for it; the schema does not offer ``null``, the
#: body parser refuses it (``400 validation_error``, :func:`refcore_http.bodies.structure`), and
#: the core refuses it from a library caller as it refuses any mistyped value.
NOT_NULL = "refcore_not_null"
PATCH: dict[str, Any] = {NOT_NULL: True}


#: The request class each schema name stands for. Schemas are named by class name, so two
#: classes of one name would share one schema: the payout routes' ``{program_id}`` body was once
#: documented as the program-creation body (found by fuzzing the API with schemathesis).
_NAMED: dict[str, type[Any]] = {}


def body_schema(cls: type[Any], definitions: dict[str, JsonObject]) -> JsonObject:
    """The schema of an attrs request class; nested classes are added to ``definitions``."""
    name = cls.__name__
    owner = _NAMED.setdefault(name, cls)
    if owner is not cls:
        raise ValueError(
            f"two request classes are named {name} ({owner.__module__} and {cls.__module__}): "
            "the OpenAPI document names each schema after its class"
        )
    if name in definitions:
        return ref(name)
    definitions[name] = {}  # reserve the name against recursion
    hints = typing.get_type_hints(cls)
    properties: dict[str, JsonObject] = {}
    required: list[str] = []
    for attribute in attrs.fields(cls):
        field_type = hints[attribute.name]
        if attribute.metadata.get(NOT_NULL):
            field_type = _without_none(field_type)
        schema = dict(_type_schema(field_type, definitions))
        for keyword in SCHEMA_KEYWORDS:
            if keyword in attribute.metadata:
                schema[keyword] = attribute.metadata[keyword]
        properties[attribute.name] = schema
        if attribute.default is attrs.NOTHING:
            required.append(attribute.name)
    out: JsonObject = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    definitions[name] = out
    return ref(name)


def _without_none(tp: Any) -> Any:
    options = tuple(a for a in get_args(tp) if a is not type(None))
    return Union[options] if len(options) > 1 else options[0]  # noqa: UP007


def _type_schema(tp: Any, definitions: dict[str, JsonObject]) -> JsonObject:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        inner = [_type_schema(a, definitions) for a in options]
        schema = inner[0] if len(inner) == 1 else {"oneOf": inner}
        return nullable(schema) if type(None) in get_args(tp) else schema
    if origin is Literal:
        values = list(get_args(tp))
        return {"enum": values} if len(values) > 1 else {"const": values[0]}
    if origin is list:
        (item,) = get_args(tp)
        return {"type": "array", "items": _type_schema(item, definitions)}
    if tp is str:
        return {"type": "string", "minLength": 1}
    if tp is bool:
        return dict(BOOLEAN)
    if tp is int:
        return dict(INTEGER)
    if attrs.has(tp):
        return body_schema(tp, definitions)
    raise TypeError(f"no JSON schema for request field type {tp!r}")
