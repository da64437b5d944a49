"""The Starlette application: every area's endpoints, assembled once.

An area joins the API by adding its ``ROUTES`` to :data:`AREAS`; the routes, the index
(``GET /v1``) and the OpenAPI document all follow from that one list.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import chain

from starlette.applications import Starlette
from starlette.exceptions import HTTPException

from refcore.ports import EventOutbox
from refcore.services.runtime import Runtime
from refcore.services.tracking import record_captures
from refcore_http.capture_batches import CaptureBatches
from refcore_http.dispatch import Context, build_routes
from refcore_http.endpoints import Api, Endpoint
from refcore_http.errors import http_exception_handler, unhandled_exception_handler
from refcore_http.lifespan import server_lifespan
from refcore_http.literal_routes import LiteralPathApp, LiteralPathRouter
from refcore_http.openapi import build_index, build_openapi
from refcore_http.pruning import Prune
from refcore_http.routes import affiliate_self as affiliate_self_routes
from refcore_http.routes import (
    affiliates,
    events,
    index,
    payouts,
    programs,
    revenue,
    tenancy,
    tracking,
    webhooks,
)
from refcore_http.routes import app_profile as app_profile_routes
from refcore_http.routes import join as join_routes
from refcore_http.routes import processor as processor_routes
from refcore_http.routes import session as session_routes
from refcore_http.settings import Settings
from refcore_http.webhooks.keys import require_secret_key
from refcore_http.workers import worker_threads
from refcore_http.write_batches import write_batches

AREAS: tuple[Sequence[Endpoint], ...] = (
    index.ROUTES,
    tracking.ROUTES,
    revenue.ROUTES,
    tenancy.ROUTES,
    session_routes.ROUTES,
    programs.ROUTES,
    affiliates.ROUTES,
    webhooks.ROUTES,
    events.ROUTES,
    payouts.ROUTES,
    processor_routes.ROUTES,
    join_routes.ROUTES,
    affiliate_self_routes.ROUTES,
    app_profile_routes.ROUTES,
)


def all_endpoints(extra: Sequence[Endpoint] = ()) -> tuple[Endpoint, ...]:
    endpoints = tuple(chain(*AREAS, extra))
    seen: set[str] = set()
    for endpoint in endpoints:
        if endpoint.operation_id in seen:
            raise ValueError(f"two endpoints share the handler name {endpoint.operation_id}")
        seen.add(endpoint.operation_id)
    return endpoints


def describe(endpoints: Sequence[Endpoint]) -> Api:
    return Api(endpoints=tuple(endpoints), index=build_index(endpoints), openapi=build_openapi(endpoints))


def create_app(
    runtime: Runtime,
    settings: Settings | None = None,
    *,
    extra: Sequence[Endpoint] = (),
    outbox: EventOutbox | None = None,
    prune: Prune | None = None,
) -> Starlette:
    """The API over ``runtime``. ``extra`` adds endpoints (tests inject failing ones with it).

    With ``outbox`` (the server), the webhook dispatcher runs for the app's lifespan; with
    ``prune`` (the server), the store is pruned every ``prune_interval_seconds``. The app
    judges dashboard sessions by ``settings.session_lifetime``: it sets the runtime's
    :attr:`~refcore.services.runtime.Runtime.session_lifetime`, which every unit of work that
    authenticates reads (a capture batch's too), so the setting holds on every path. Without
    ``REFCORE_SECRET_KEY`` only a loopback server starts (with a loud warning): see
    :mod:`refcore_http.webhooks.keys`.
    """
    settings = settings or Settings()
    require_secret_key(settings)
    runtime.session_lifetime = settings.session_lifetime
    api = describe(all_endpoints(extra))
    workers = worker_threads(settings.worker_threads)
    read_threads = settings.read_threads
    context = Context(
        runtime=runtime,
        settings=settings,
        api=api,
        workers=workers,
        read_workers=worker_threads(read_threads, name="refcore-reader") if read_threads else workers,
        capture_batches=CaptureBatches(partial(record_captures, runtime), workers),
        write_batches=write_batches(runtime, workers),
    )
    app = LiteralPathApp(
        exception_handlers={
            HTTPException: http_exception_handler,
            Exception: unhandled_exception_handler,
        },
    )
    # Starlette builds a plain Router and takes no other, so its router is replaced before the
    # first request builds the middleware stack around it (see literal_routes).
    app.router = LiteralPathRouter(
        build_routes(api.endpoints, context),
        # ``/v1/apps/`` is not ``/v1/apps``: answer 404 rather than a redirect clients may not follow.
        redirect_slashes=False,
        lifespan=server_lifespan(runtime, settings, outbox=outbox, prune=prune),
    )
    app.state.api = api
    app.state.runtime = runtime
    app.state.settings = settings
    return app
