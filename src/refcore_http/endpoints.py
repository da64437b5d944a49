"""The route-definition type: one :class:`Endpoint` per method and path.

Everything the API says about itself comes from these definitions: the Starlette routes
(:mod:`refcore_http.dispatch`), the index ``GET /v1`` and the OpenAPI document
(:mod:`refcore_http.openapi`). An area of the API is a module under ``routes/`` exposing
``ROUTES: tuple[Endpoint, ...]``; :mod:`refcore_http.app` lists the areas, so a new area is one
line there.

Handlers are plain synchronous functions ``(Call) -> Reply``. The dispatcher runs them in a worker
thread, because every core service is synchronous (it may wait on a database) and must never block
the event loop. A handler that is a coroutine function (``async def``) runs on the event loop
instead, after authentication: it must not block, and reaches the store only through awaitables
that do their work in worker threads (capture awaits :mod:`refcore_http.capture_batches`, and
saves the thread hop of every request that has no key to authenticate). A loop handler may
also authenticate the credential itself (``Endpoint.authenticates_itself``): capture hands a
server capture's key to its batch, which looks it up once for all the captures sending it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import Factory, field, frozen
from starlette.datastructures import Headers

from refcore.errors import Unauthenticated
from refcore.representation import JsonObject
from refcore.services.principal import Principal, PrincipalKind
from refcore.services.runtime import Runtime

if TYPE_CHECKING:
    from refcore_http.capture_batches import CaptureBatches
    from refcore_http.settings import Settings

_PATH_PARAM = re.compile(r":([A-Za-z_][A-Za-z0-9_]*)")

#: Methods whose requests carry no body: nothing is decoded for them, and none is batched.
METHODS_WITHOUT_BODY = frozenset({"GET", "HEAD", "OPTIONS"})


@frozen
class Access:
    """Which credentials an endpoint takes; ``name`` is what the index shows as ``auth``."""

    name: str
    kinds: frozenset[PrincipalKind]
    #: No credential needed (public); a credential, when sent, must still be valid and allowed.
    optional: bool = False
    #: The credential is never read (``GET /v1``): sending one changes nothing.
    ignored: bool = False
    description: str = ""


PUBLIC = Access("none", frozenset(), optional=True, ignored=True, description="no credential")
PUBLIC_OR_APP_KEY = Access(
    "none_or_app_key",
    frozenset({PrincipalKind.APP_KEY, PrincipalKind.MANAGED_KEY}),
    optional=True,
    description="no credential (public browser call) or an App key",
)
SESSION = Access("session", frozenset({PrincipalKind.SESSION}), description="a dashboard session")
APP_KEY = Access(
    "app_key",
    frozenset({PrincipalKind.APP_KEY, PrincipalKind.MANAGED_KEY}),
    description="an App key or a managed revenue key",
)
DEVELOPER = Access(
    "session_or_app_key",
    frozenset({PrincipalKind.SESSION, PrincipalKind.APP_KEY, PrincipalKind.MANAGED_KEY}),
    description="a dashboard session or an App key",
)
#: Payout execution (interface 5 rule 4): only a Live App key of the exact App. A session and a
#: Test key still reach the service, which answers them ``403 live_key_required``, the code
#: clients act on; the index named these endpoints ``session_or_app_key`` (probe AK).
LIVE_APP_KEY = Access(
    "live_app_key",
    DEVELOPER.kinds,
    description="a Live App key of the exact App",
)


@frozen
class HeaderParam:
    """A request header an endpoint reads besides ``Authorization`` and ``Content-Type``; the
    handler enforces it, this only documents it in the OpenAPI document."""

    name: str
    description: str
    required: bool = True


@frozen
class QueryParam:
    """One query parameter; values arrive as strings and are converted before the handler runs."""

    name: str
    description: str
    #: ``string`` or ``integer``.
    type: str = "string"
    enum: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    required: bool = False

    def schema(self) -> JsonObject:
        if self.enum:
            return {"type": "string", "enum": list(self.enum)}
        if self.type == "integer":
            out: JsonObject = {"type": "integer"}
            if self.minimum is not None:
                out["minimum"] = self.minimum
            if self.maximum is not None:
                out["maximum"] = self.maximum
            return out
        return {"type": "string", "minLength": 1}


@frozen
class Output:
    """What a successful call answers: an object schema name (see :mod:`refcore_http.schemas`),
    whether it is a list of them, and the statuses it may carry."""

    schema: str | None
    statuses: tuple[int, ...] = (200,)
    #: A list envelope ``{"object": "list", "data": [...], "has_more"}`` of ``schema`` objects.
    many: bool = False
    #: A body that is not JSON (the CSV export): its media type; described as a string.
    media_type: str | None = None
    #: ``(status, schema name)`` of a status whose body is another schema than ``schema``: the
    #: webhook endpoint's ``PUT`` answers ``201`` with the signing secret and ``200`` without.
    schemas: tuple[tuple[int, str], ...] = ()
    #: Error statuses only this endpoint answers, besides those every endpoint of its kind does
    #: (:func:`refcore_http.openapi.build_openapi`): ``429`` of the rate-limited signup.
    errors: tuple[int, ...] = ()


def returns(schema: str, *statuses: int) -> Output:
    return Output(schema=schema, statuses=statuses or (200,))


def returns_list(schema: str) -> Output:
    return Output(schema=schema, many=True)


NO_CONTENT = Output(schema=None, statuses=(204,))


@frozen
class Visitor:
    """The browser behind a request, from the connection (and trusted proxies only)."""

    ip: str | None
    user_agent: str | None


@frozen
class Api:
    """The assembled API, for the endpoints that describe it (index and OpenAPI)."""

    endpoints: tuple[Endpoint, ...]
    index: JsonObject
    openapi: JsonObject


@frozen
class Call:
    """One request, parsed and authenticated, as a handler sees it."""

    runtime: Runtime
    settings: Settings
    api: Api
    principal: Principal | None
    params: Mapping[str, str]
    query: Mapping[str, Any]
    #: An instance of the endpoint's body class, or ``None`` when it takes none.
    body: Any
    #: Top-level body fields the caller actually sent (PATCH changes only these).
    sent: frozenset[str]
    visitor: Visitor
    #: Where loop handlers send captures to be recorded together.
    capture_batches: CaptureBatches
    #: The request headers, case-insensitive (``Idempotency-Key`` of payout reports); ``getlist``
    #: tells a header sent twice.
    headers: Headers = field(factory=Headers)
    #: The exact request bytes, for endpoints with ``raw_body`` (signed payloads); else empty.
    raw_body: bytes = b""
    #: The credential sent, not yet authenticated, for an endpoint that ``authenticates_itself``
    #: (``principal`` is then ``None``). A secret: never part of a repr.
    credential: str | None = field(default=None, repr=False)

    @property
    def who(self) -> Principal:
        if self.principal is None:
            raise Unauthenticated("This endpoint needs an Authorization: Bearer credential")
        return self.principal


@frozen
class Reply:
    body: JsonObject | None
    status: int = 200
    #: A non-JSON body (e.g. ``text/csv``, an image) sent as is with ``media_type``, instead of ``body``.
    text: str | bytes | None = None
    media_type: str | None = None
    #: Extra response headers (``ETag``, ``Cache-Control`` of the public logo).
    headers: tuple[tuple[str, str], ...] = ()


#: The headers of an answer that reveals a secret (an API key, a webhook signing secret): no
#: cache between the server and the client (a proxy, a browser's disk cache) may keep a copy of
#: what the server itself stores only as a digest or sealed (probe AJ).
NO_STORE: tuple[tuple[str, str], ...] = (("Cache-Control", "no-store"),)


def ok(body: JsonObject, *, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(body=body, headers=headers)


def created(body: JsonObject, *, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(body=body, status=201, headers=headers)


Handler = Callable[[Call], Reply]
#: Runs on the event loop (see the module docstring).
LoopHandler = Callable[[Call], Awaitable[Reply]]
#: See ``Endpoint.shortcut``: the decoded body, the visitor, where captures are recorded; the
#: reply to await, or ``None`` to hand the request to the pipeline.
Shortcut = Callable[[dict[str, Any], Visitor, "CaptureBatches"], Awaitable[Reply] | None]


@frozen
class Endpoint:
    method: str
    #: As in the interface: ``/v1/programs/:id``.
    path: str
    summary: str
    handler: Handler | LoopHandler
    access: Access
    output: Output
    #: An attrs class the JSON body is structured into; ``None``: no payload (empty body or ``{}``).
    body: type[Any] | None = None
    #: Every field of ``body`` is optional and an empty body means ``{}``: an action route that
    #: grew an optional field (mark-paid's ``amount``) still takes the empty body it always took.
    body_optional: bool = False
    query: tuple[QueryParam, ...] = ()
    headers: tuple[HeaderParam, ...] = ()
    #: Answer browsers across origins (public capture).
    cors: bool = False
    description: str = ""
    tags: tuple[str, ...] = ()
    #: The handler reads the exact bytes itself (``Call.raw_body``): a payload whose signature
    #: covers those bytes (processor events). The dispatcher neither decodes nor structures it.
    raw_body: bool = False
    #: The media types a ``raw_body`` endpoint documents (an image upload); default JSON.
    raw_media_types: tuple[str, ...] = ()
    #: A loop handler that authenticates the credential itself, later and together with other
    #: requests (a server capture's key, with its batch: one lookup a batch instead of a worker
    #: hop a request). It gets the credential in ``Call.credential`` and must refuse what
    #: ``access`` refuses. The dispatcher still authenticates first when the request did not
    #: parse, and before it answers any other error of the handler, so a bad credential is
    #: ``401`` whatever else is wrong, as on every endpoint.
    authenticates_itself: bool = False
    #: A way past the pipeline for the plainest requests of a busy loop endpoint (a browser's
    #: capture): for a request to this literal path that sends no credential and no query, it
    #: gets the decoded JSON body and the visitor, and returns the reply to await, or ``None``
    #: for anything it does not take, which the pipeline then answers as it would without a
    #: shortcut. It skips the body's structuring and the ``Call`` (about 7 µs of a capture's
    #: 30 on the event loop, ``bench/history.md``), so it must take only bodies that the
    #: endpoint's ``body`` class structures to the same values, and raise only what the
    #: handler would raise for them. Only for a literal path with a JSON body whose credential
    #: is optional (checked here, once): the pipeline then reads nothing before the body.
    shortcut: Shortcut | None = field(default=None)
    #: The handler's work is one write transaction with nothing read after it (a payment): on
    #: a store that has write batches its requests run in them, together with the others that
    #: arrive at the same time (:mod:`refcore_http.write_batches`).
    batched: bool = field(default=False)

    #: An ``async def`` handler, run on the event loop: decided once, not on every request
    #: (``inspect`` walks the function's flags each time).
    runs_on_loop: bool = field(
        init=False,
        eq=False,
        repr=False,
        default=Factory(lambda self: inspect.iscoroutinefunction(self.handler), takes_self=True),
    )

    @shortcut.validator
    def _shortcut_fits(self, _: object, shortcut: Shortcut | None) -> None:
        if shortcut is None:
            return
        if not self.access.optional or self.path_params or self.body is None or self.raw_body:
            raise ValueError(
                f"{self.method} {self.path}: a shortcut needs an optional credential, "
                "a literal path and a JSON body"
            )

    @batched.validator
    def _batch_fits(self, _: object, batched: bool) -> None:
        if batched and (self.method in METHODS_WITHOUT_BODY or self.runs_on_loop or self.raw_body):
            raise ValueError(
                f"{self.method} {self.path}: only a worker thread's write with a JSON body is batched"
            )

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(_PATH_PARAM.findall(self.path))

    @property
    def starlette_path(self) -> str:
        """``/v1/programs/{id}``: Starlette and OpenAPI write parameters in braces."""
        return _PATH_PARAM.sub(r"{\1}", self.path)

    @property
    def operation_id(self) -> str:
        return self.handler.__name__.strip("_")


# -- query parameters shared by many lists ---------------------------------------------------

LIMIT = QueryParam("limit", "Page size, 1 to 100 (default 25).", type="integer", minimum=1, maximum=100)
STARTING_AFTER = QueryParam(
    "starting_after", "ID of the last object of the previous page; must come from this same list."
)
PAGING = (LIMIT, STARTING_AFTER)
APP_ID = QueryParam("app_id", "The App whose objects are listed (sessions; App keys default to their App).")
ENVIRONMENT = QueryParam(
    "environment", "Activity mode (sessions; default live; App keys use their own).", enum=("test", "live")
)


def filter_param(name: str, description: str) -> QueryParam:
    return QueryParam(name, description)
