"""Starlette's router and application, with the requests for paths that have no parameters
found by one lookup.

Starlette tries its routes in order, one regular expression each, until one matches. refcore
has some seventy routes, sorted so that literal segments come first (see
:func:`refcore_http.dispatch.build_routes`), and a request for the sixteenth (``GET
/v1/payout-balance``) paid sixteen matches before its handler ran: about 1 µs each, a few
percent of a balance read's CPU. The hot paths (capture, identify, payments, refunds, lists,
balances) have no parameters, so the router first looks the request's path up among the
routes whose path is all literal.

Before the router, every request also passed Starlette's two middlewares (the last-resort
``500`` and the ``HTTPException`` handlers), each wrapping ``send`` once more, and the route's
own exception wrapper: about 11 µs of the ceiling's 43 µs of Starlette per request, measured
in-process. refcore's dispatcher answers every error itself
(:func:`refcore_http.dispatch.handle`), and ``HTTPException`` comes only from the router's
own ``404`` and ``405``. So :class:`LiteralPathApp` hands a request whose method and literal
path name a route straight to that route's endpoint, and sends everything else (parameters,
unknown paths, wrong methods, a ``root_path``, lifespan) through Starlette as before. An app
given middleware of its own (``add_middleware``) never takes the shortcut.

The lookup only shortens the search; it never changes its outcome. The route found still
matches the request itself, and only a full match (path and method) is taken. A literal route
is also what the loop would have picked: a route with parameters that matches the same path
has a parameter where the literal one has a literal segment, so ``build_routes`` sorts it
after.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Lifespan, Receive, Scope, Send

from refcore_http.errors import log_unhandled

#: A route's endpoint: what Starlette's ``request_response`` wraps.
RouteEndpoint = Callable[[Request], Awaitable[Response]]


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
        self._endpoints: dict[tuple[str, str], RouteEndpoint] = {
            (method, path): route.endpoint
            for path, route in literal.items()
            for method in route.methods or ()
        }

    def literal_route(self, scope: Scope) -> tuple[Route, Scope] | None:
        """The literal route that fully matches the request, with its child scope; ``None``
        sends the request through Starlette's loop."""
        route = self._literal.get(scope.get("path", ""))
        if route is None:
            return None
        match, child_scope = route.matches(scope)
        return (route, child_scope) if match is Match.FULL else None

    def literal_endpoint(self, scope: Scope) -> RouteEndpoint | None:
        """The endpoint of the literal route that fully matches an HTTP request, if any: the
        one :meth:`literal_route` finds, by one lookup of the method and the path."""
        if scope.get("root_path"):
            return None  # the route's path is then what follows the root path: let Starlette strip it
        return self._endpoints.get((scope["method"], scope["path"]))

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


class LiteralPathApp(Starlette):
    """A :class:`~starlette.applications.Starlette` whose literal routes are served without
    its middleware stack (see the module docstring); its router must be a
    :class:`LiteralPathRouter`."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.user_middleware:
            router = self.router
            endpoint = router.literal_endpoint(scope) if isinstance(router, LiteralPathRouter) else None
            if endpoint is not None:
                scope["app"] = self
                try:
                    response = await endpoint(Request(scope, receive, send))
                    await response(scope, receive, send)
                except Exception as exc:
                    # Only sending can fail here (the endpoint answers its own errors); as
                    # Starlette's last resort would, log it and let the server close the connection.
                    log_unhandled(scope["method"], scope["path"], exc)
                    raise
                return
        await super().__call__(scope, receive, send)
