"""The lookup of literal paths, by the router and by the app: faster, and never a different
route or answer than Starlette's loop."""

from __future__ import annotations

import asyncio
import itertools
import logging

import pytest
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.literal_routes import LiteralPathRouter
from refcore_http.settings import Settings
from tests.http.asgi_calls import asgi_call

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _router(runtime: Runtime, settings: Settings) -> LiteralPathRouter:
    router = create_app(runtime, settings).router
    assert isinstance(router, LiteralPathRouter)
    return router


def _scope(method: str, path: str) -> Scope:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def _loop_choice(routes: list[BaseRoute], scope: Scope) -> tuple[BaseRoute, Match] | None:
    """What Starlette's ``Router.app`` picks: the first full match, else the first partial one."""
    partial = None
    for route in routes:
        match, _child = route.matches(scope)
        if match is Match.FULL:
            return route, match
        if match is Match.PARTIAL and partial is None:
            partial = route, match
    return partial


def _paths(routes: list[BaseRoute]) -> list[str]:
    """Every route's path with its parameters filled in, plus literal paths that shadow them."""
    paths = {route.path.replace("{", "").replace("}", "") for route in routes if isinstance(route, Route)}
    return sorted(paths | {"/v1/transactions/refunds", "/v1/nothing", "/v1/apps/"})


def test_the_hot_paths_are_found_by_lookup_and_the_others_fall_back_to_the_loop(
    runtime: Runtime, settings: Settings
) -> None:
    router = _router(runtime, settings)
    for method, path in [
        ("POST", "/v1/capture"),
        ("POST", "/v1/identify"),
        ("POST", "/v1/transactions"),
        ("POST", "/v1/transactions/refunds"),
        ("GET", "/v1/commissions"),
        ("GET", "/v1/payout-balance"),
    ]:
        found = router.literal_route(_scope(method, path))
        assert found is not None and found[0].path == path, (method, path)
        assert router.literal_endpoint(_scope(method, path)) is found[0].endpoint, (method, path)
    # A path with a parameter, a method the literal path lacks (405 comes from the loop), and
    # an unknown path are left to Starlette's loop.
    left = [("GET", "/v1/transactions/txn_1"), ("DELETE", "/v1/programs"), ("GET", "/v1/nothing")]
    for method, path in left:
        assert router.literal_route(_scope(method, path)) is None, (method, path)
        assert router.literal_endpoint(_scope(method, path)) is None, (method, path)


def test_both_lookups_take_a_literal_route_only_where_starlette_s_loop_would_have_run_it(
    runtime: Runtime, settings: Settings
) -> None:
    """The router's lookup (route and child scope) and the app's (endpoint, past the
    middlewares), for every method and path: the loop's own full match, or nothing."""
    router = _router(runtime, settings)
    taken = 0
    for method, path in itertools.product(_METHODS, _paths(router.routes)):
        scope = _scope(method, path)
        found = router.literal_route(scope)
        endpoint = router.literal_endpoint(scope)
        choice = _loop_choice(router.routes, scope)
        if found is None or endpoint is None:
            assert found is None and endpoint is None, (method, path)
            # Starlette's loop answers, and what it finds is no literal route's full match (a
            # route with parameters, a 405, a 404).
            if choice is not None and choice[1] is Match.FULL:
                assert isinstance(choice[0], Route) and choice[0].param_convertors, (method, path)
            continue
        taken += 1
        route, child_scope = found
        assert choice == (route, Match.FULL), (method, path)
        assert child_scope["endpoint"] is route.endpoint is endpoint, (method, path)
    assert taken > 20  # the lookups are in use, not bypassed
    # Behind a root path the route's path is what follows it: Starlette strips it, not the lookup.
    assert router.literal_endpoint({**_scope("POST", "/v1/capture"), "root_path": "/api"}) is None


def _asgi_call(app: ASGIApp, method: str, path: str) -> tuple[int, dict[bytes, bytes]]:
    start = asgi_call(app, method, path)[0]
    return start["status"], dict(start["headers"])


def test_middleware_added_to_the_app_still_runs_for_literal_routes(
    runtime: Runtime, settings: Settings
) -> None:
    app = create_app(runtime, settings)
    seen: list[str] = []

    class Marks:
        def __init__(self, inner: ASGIApp) -> None:
            self.inner = inner

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                seen.append(scope["path"])
            await self.inner(scope, receive, send)

    app.add_middleware(Marks)
    status, _ = _asgi_call(app, "GET", "/v1")
    assert status == 200
    assert seen == ["/v1"]


def test_a_failure_to_send_on_the_direct_path_is_logged_and_raised(
    runtime: Runtime, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(runtime, settings)
    scope: Scope = {**_scope("GET", "/v1"), "type": "http", "query_string": b"", "client": ("127.0.0.1", 1)}

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: Message) -> None:
        raise OSError("the client went away")

    with pytest.raises(OSError, match="went away"), caplog.at_level(logging.ERROR, logger="refcore_http"):
        asyncio.run(app(scope, receive, send))
    assert "Unhandled error in GET /v1" in caplog.text


def test_literal_and_routed_requests_answer_alike(runtime: Runtime, settings: Settings) -> None:
    """The same request by the direct path, and by Starlette's stack (forced by a no-op
    middleware): the same status and headers."""
    direct = create_app(runtime, settings)
    routed = create_app(runtime, settings)
    routed.add_middleware(_PassThrough)
    requests = [("GET", "/v1"), ("POST", "/v1/capture"), ("OPTIONS", "/v1/capture"), ("HEAD", "/v1")]
    for method, path in requests:
        assert _asgi_call(direct, method, path) == _asgi_call(routed, method, path), (method, path)


class _PassThrough:
    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.inner(scope, receive, send)
