"""Starlette's router, with the routes of paths that have no parameters found by one lookup.

Starlette tries its routes in order, one regular expression each, until one matches. refcore
has some seventy routes, sorted so that literal segments come first (see
:func:`refcore_http.dispatch.build_routes`), and a request for the sixteenth (``GET
/v1/payout-balance``) paid sixteen matches before its handler ran: about 1 µs each, a few
percent of a balance read's CPU. The hot paths (capture, identify, payments, refunds, lists,
balances) have no parameters, so this router first looks the request's path up among the
routes whose path is all literal.

The lookup only shortens the search; it never changes its outcome. The route found still
matches the request itself, and only a full match (path and method) is taken. Anything else
(a path with parameters, a method the literal path lacks, a mount prefix) goes through
Starlette's loop as before. A literal route is also what the loop would have picked: a route
with parameters that matches the same path has a parameter where the literal one has a
literal segment, so ``build_routes`` sorts it after.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Lifespan, Receive, Scope, Send


class LiteralPathRouter(Router):
    """A :class:`~starlette.routing.Router` that finds literal paths by dictionary lookup."""

    def __init__(
        self, routes: Sequence[BaseRoute], *, redirect_slashes: bool, lifespan: Lifespan[object] | None
    ) -> None:
        super().__init__(routes=routes, redirect_slashes=redirect_slashes, lifespan=lifespan)
        literal: dict[str, Route] = {}
        for route in self.routes:
            if isinstance(route, Route) and not route.param_convertors:
                literal.setdefault(route.path, route)  # the first one, as the loop would find
        self._literal = literal

    def literal_route(self, scope: Scope) -> tuple[Route, Scope] | None:
        """The literal route that fully matches the request, with its child scope; ``None``
        sends the request through Starlette's loop."""
        route = self._literal.get(scope.get("path", ""))
        if route is None:
            return None
        match, child_scope = route.matches(scope)
        return (route, child_scope) if match is Match.FULL else None

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            found = self.literal_route(scope)
            if found is not None:
                route, child_scope = found
                if "router" not in scope:
                    scope["router"] = self
                scope["route"] = route
                scope.update(child_scope)
                await route.handle(scope, receive, send)
                return
        await super().app(scope, receive, send)
