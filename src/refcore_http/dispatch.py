"""From endpoint definitions to Starlette routes, and the request pipeline every call runs through.

Pipeline: authenticate (``401``/``403``), parse the query (``400``), read and structure the body
(``400``/``413``), then run the handler in a worker thread (:mod:`refcore_http.workers`),
because the core is synchronous and must not block the event loop. Authentication reads the
database, so it runs in that same worker thread, just before the handler: one thread hop per
request rather than two (each hop is a thread wake-up, a large share of a short request's CPU).
A loop handler (``async def``, capture) runs on the loop after authentication, which then
takes a hop of its own only when a credential was sent, unless the endpoint authenticates it
itself (a server capture's key, with its batch: :func:`_authenticating_itself`).
The query and body are parsed on the loop before that hop; a parse error is held back until
authentication passed, so the answer stays the one of the pipeline's order (a bad credential is
``401`` whatever the body). A ``GET`` authenticates and reads in one read-only unit of work
(:meth:`~refcore.services.runtime.Runtime.shared_read`) instead of one each; any other request
authenticates in the unit of work of its write, where the store allows it
(:meth:`~refcore.services.runtime.Runtime.read_then_write`): there a key authenticated before
is only checked to be still standing, in the write's first read (:mod:`.known_keys`).

An endpoint may also have a shortcut (``Endpoint.shortcut``: public capture, the busiest
request there is): a request that sends no credential and no query has its body read and
decoded, then the shortcut takes it past the other steps, or hands it back to the pipeline,
which answers it as if there were no shortcut.

A :class:`~refcore.errors.RefcoreError` becomes its status and envelope; any other exception
is logged and answered ``500 internal_error`` with no details.

One Starlette route serves each path, dispatching on the method, so a wrong method is ``405``
with an ``Allow`` header naming every method the path has. Literal segments are tried before
parameters (``/v1/transactions/refunds`` before ``/v1/transactions/:id``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from attrs import field, frozen
from starlette.datastructures import QueryParams
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from refcore.credentials import shown
from refcore.errors import Forbidden, InternalError, RefcoreError, Unauthenticated, ValidationError
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime
from refcore_http.auth import credential_of, principal_of
from refcore_http.bodies import decode_object, read_body, structure
from refcore_http.capture_batches import CaptureBatches
from refcore_http.cors import allowed_methods, cors_headers
from refcore_http.endpoints import (
    METHODS_WITHOUT_BODY,
    Api,
    Call,
    Endpoint,
    Handler,
    LoopHandler,
    Reply,
    Shortcut,
)
from refcore_http.errors import error_response, internal_error_response, log_unhandled, refcore_error_response
from refcore_http.json_response import JsonResponse
from refcore_http.known_keys import KnownKeys
from refcore_http.queries import parse_query
from refcore_http.request_headers import header
from refcore_http.request_target import check_path, strict_query
from refcore_http.settings import Settings
from refcore_http.text_safety import check_text
from refcore_http.visitors import visitor_of
from refcore_http.workers import WorkerThreads
from refcore_http.write_batches import WriteBatches

_NO_QUERY = QueryParams()
#: The body's fields when it has none. Not ``frozenset[str]()`` in each request: calling the
#: alias costs 0.3 µs against 0.03, as it tries to set ``__orig_class__`` on the frozenset and
#: swallows the ``AttributeError``.
_NOTHING_SENT: frozenset[str] = frozenset()


@frozen
class Context:
    runtime: Runtime
    settings: Settings
    api: Api
    workers: WorkerThreads
    #: Where ``GET`` requests run: a pool of their own (``REFCORE_READ_WORKER_THREADS``), or
    #: ``workers`` itself.
    read_workers: WorkerThreads
    capture_batches: CaptureBatches
    #: Where ``batched`` endpoints run, when the store has write batches (SQLite).
    write_batches: WriteBatches | None = None
    #: The keys this app has authenticated (:mod:`refcore_http.known_keys`).
    known_keys: KnownKeys = field(factory=KnownKeys)


async def _payload(request: Request, endpoint: Endpoint, settings: Settings) -> tuple[Any, frozenset[str]]:
    if endpoint.method in METHODS_WITHOUT_BODY:
        return None, _NOTHING_SENT
    raw = await read_body(request, limit=settings.max_body_bytes)
    content_type = header(request, b"content-type")
    if endpoint.body is None:
        # Action routes take no payload: an empty body or ``{}`` (decisions 11).
        if not raw.strip():
            return None, _NOTHING_SENT
        extra = sorted(decode_object(raw, content_type))
        if extra:
            named = shown(extra[0])
            raise ValidationError(f"Unknown field {named}; this endpoint takes no payload", param=named)
        return None, _NOTHING_SENT
    if endpoint.body_optional and not raw.strip():
        parsed = structure({}, endpoint.body)
    else:
        parsed = structure(decode_object(raw, content_type), endpoint.body)
    return parsed.value, parsed.sent


def _render(reply: Reply) -> Response:
    if reply.text is not None:
        return Response(
            reply.text, status_code=reply.status, media_type=reply.media_type, headers=dict(reply.headers)
        )
    if reply.body is None:
        return Response(status_code=reply.status, headers=dict(reply.headers))
    return JsonResponse(reply.body, status_code=reply.status, headers=dict(reply.headers) or None)


async def handle(
    request: Request, endpoint: Endpoint, context: Context, *, preflight_methods: str | None = None
) -> Response:
    """The endpoint's answer to ``request``: its reply, or the error it raised in its envelope.
    ``preflight_methods``: the path's methods, which a CORS preflight's answer names."""
    try:
        check_path(request.scope)  # before anything: the route itself may not be the one sent
        reply = await _shortcut(request, endpoint, context) if endpoint.shortcut is not None else None
        if reply is None:
            reply = await _pipeline(request, endpoint, context)
        response = _render(reply)
    except RefcoreError as exc:
        logged_as = None
        if isinstance(exc, InternalError):
            # The store's own failures (``database_errors``) carry their cause for this log only.
            logged_as = log_unhandled(endpoint.method, endpoint.path, exc)
        response = refcore_error_response(exc, logged_as=logged_as)
    except ClientDisconnect:
        # The client left before its body arrived: nothing ran, no one reads this answer, and
        # nothing is logged. As an unhandled error it had written a traceback to the log for
        # every connection anyone closed mid-body, without a key on the public routes (probe AA).
        response = error_response(
            400, "validation_error", "The client left before its request's body arrived"
        )
    except Exception as exc:
        response = internal_error_response(log_unhandled(endpoint.method, endpoint.path, exc))
    if endpoint.cors:
        response.raw_headers += cors_headers(
            context.settings.cors_allow_origin, preflight_methods=preflight_methods
        )
    return response


async def _shortcut(request: Request, endpoint: Endpoint, context: Context) -> Reply | None:
    """The reply of ``endpoint.shortcut``, or ``None`` for a request it does not take.

    It sees only requests that send no credential and no query, to a literal path whose
    credential is optional (``Endpoint`` checks that once): the pipeline would then authenticate
    nothing and parse nothing before the body, so reading and decoding the body here fails
    exactly as it would fail there. A request the shortcut hands back goes through the whole
    pipeline, which reads the same body again from the request's scope
    (:func:`~refcore_http.bodies.read_body`)."""
    if request.scope.get("query_string") or header(request, b"authorization") is not None:
        return None
    raw = await read_body(request, limit=context.settings.max_body_bytes)
    body = decode_object(raw, header(request, b"content-type"))
    shortcut = cast(Shortcut, endpoint.shortcut)
    taken = shortcut(body, visitor_of(request, context.settings.trusted_proxies), context.capture_batches)
    return None if taken is None else await taken


async def _pipeline(request: Request, endpoint: Endpoint, context: Context) -> Reply:
    """Every step of the module docstring's pipeline, up to the handler's reply."""
    credential = credential_of(request, endpoint.access)
    parse_error: RefcoreError | None = None
    query: Any = None
    raw_body = b""
    body: Any = None
    sent = _NOTHING_SENT
    try:
        for name, value in request.path_params.items():
            check_text(value, name)  # ``%00`` in a path: refused before any store sees it
        # Most requests carry no query: Starlette would still parse the empty one into a
        # new QueryParams (2 µs of a capture's 150), and an endpoint that declares no
        # parameter has nothing to check in an empty one.
        if request.scope.get("query_string"):
            query = parse_query(strict_query(request.scope), endpoint.query)
        else:
            query = parse_query(_NO_QUERY, endpoint.query) if endpoint.query else {}
        if endpoint.raw_body:
            raw_body = await read_body(request, limit=context.settings.max_body_bytes)
        else:
            body, sent = await _payload(request, endpoint, context.settings)
    except RefcoreError as exc:
        if credential is None:
            raise
        parse_error = exc
    params = dict(request.path_params)
    visitor = visitor_of(request, context.settings.trusted_proxies)

    # Only a write's block (read_then_write) can check a known key in its first read; a GET
    # would make the key's digest for nothing.
    known_keys = None if endpoint.method == "GET" else context.known_keys

    def authenticate() -> Principal | None:
        if credential is None:
            return None
        return principal_of(context.runtime, endpoint.access, credential, known_keys)

    def call_as(principal: Principal | None, unchecked_credential: str | None = None) -> Call:
        if parse_error is not None:
            raise parse_error
        return Call(
            runtime=context.runtime,
            settings=context.settings,
            api=context.api,
            principal=principal,
            params=params,
            query=query,
            body=body,
            sent=sent,
            visitor=visitor,
            capture_batches=context.capture_batches,
            headers=request.headers,
            raw_body=raw_body,
            credential=unchecked_credential,
        )

    if endpoint.runs_on_loop:
        loop_handler = cast(LoopHandler, endpoint.handler)
        if credential is not None and endpoint.authenticates_itself and parse_error is None:
            return await _authenticating_itself(
                loop_handler, call_as(None, credential), lambda: context.workers.run(authenticate)
            )
        principal = None if credential is None else await context.workers.run(authenticate)
        return await loop_handler(call_as(principal))

    # Authentication first, in the handler's own worker thread (one hop per request).
    handler = cast(Handler, endpoint.handler)

    def authenticate_and_handle() -> Reply:
        if endpoint.method != "GET":
            # A write: the credential's lookup leaves with the write's own transaction
            # where the store allows it (PostgreSQL).
            with context.runtime.read_then_write():
                return handler(call_as(authenticate()))
        # A read: the credential's lookup and the handler's reads share one unit of work.
        with context.runtime.shared_read():
            return handler(call_as(authenticate()))

    if endpoint.batched and context.write_batches is not None:
        return await context.write_batches.record(authenticate_and_handle)
    pool = context.read_workers if endpoint.method == "GET" else context.workers
    return await pool.run(authenticate_and_handle)


async def _authenticating_itself(
    handler: LoopHandler, call: Call, authenticate: Callable[[], Awaitable[Principal | None]]
) -> Reply:
    """Run a handler that authenticates ``call.credential`` itself (``Endpoint.authenticates_itself``).

    Its errors other than authentication's own are answered only once the credential is known
    to be good: the dispatcher authenticates it then, so that a bad credential is ``401`` (or
    ``403``) whatever else was wrong with the request, as on every other endpoint. Only a
    request that fails pays that extra lookup."""
    try:
        return await handler(call)
    except (Unauthenticated, Forbidden):
        raise
    except RefcoreError:
        await authenticate()
        raise


def _specificity(path: str) -> tuple[int, ...]:
    return tuple(1 if segment.startswith("{") else 0 for segment in path.strip("/").split("/"))


class PathEndpoint:
    """What answers one path: dispatches on the method. Starlette's route gets the bound
    :meth:`answer` (an instance would be taken for an ASGI app). ``methods`` is what the path's
    CORS preflight names; ``cors`` also serves the path's ``405``
    (:func:`refcore_http.errors.http_exception_handler`, which finds it on the method's
    ``__self__``), which Starlette raises before any endpoint runs."""

    def __init__(self, by_method: dict[str, Endpoint], context: Context) -> None:
        self._by_method = by_method
        self._context = context
        self.cors = any(endpoint.cors for endpoint in by_method.values())
        self.methods = allowed_methods(by_method)

    async def answer(self, request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        endpoint = self._by_method[method]
        preflight = self.methods if method == "OPTIONS" else None
        return await handle(request, endpoint, self._context, preflight_methods=preflight)


def build_routes(endpoints: Sequence[Endpoint], context: Context) -> list[Route]:
    by_path: dict[str, dict[str, Endpoint]] = {}
    for endpoint in endpoints:
        methods = by_path.setdefault(endpoint.starlette_path, {})
        if endpoint.method in methods:
            raise ValueError(f"two endpoints for {endpoint.method} {endpoint.path}")
        methods[endpoint.method] = endpoint
    return [
        Route(path, PathEndpoint(methods, context).answer, methods=list(methods))
        for path, methods in sorted(by_path.items(), key=lambda item: _specificity(item[0]))
    ]
