"""The router's lookup of literal paths: faster, and never a different route than Starlette's loop."""

from __future__ import annotations

import itertools

from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.literal_routes import LiteralPathRouter
from refcore_http.settings import Settings

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


def test_every_literal_route_the_lookup_takes_is_the_one_the_loop_would_have_taken(
    runtime: Runtime, settings: Settings
) -> None:
    router = _router(runtime, settings)
    taken = 0
    for method, path in itertools.product(_METHODS, _paths(router.routes)):
        scope = _scope(method, path)
        found = router.literal_route(scope)
        if found is None:
            continue
        taken += 1
        route, child_scope = found
        assert _loop_choice(router.routes, scope) == (route, Match.FULL), (method, path)
        assert child_scope["endpoint"] is route.endpoint
    assert taken > 20  # the lookup is in use, not bypassed


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
    # A path with a parameter, a method the literal path lacks (405 comes from the loop), and
    # an unknown path are left to Starlette's loop.
    assert router.literal_route(_scope("GET", "/v1/transactions/txn_1")) is None
    assert router.literal_route(_scope("DELETE", "/v1/programs")) is None
    assert router.literal_route(_scope("GET", "/v1/nothing")) is None
