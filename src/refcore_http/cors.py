"""The headers that let a browser page on another origin call refcore's public routes.

Browser capture (``/v1/capture``) and the hosted join routes (``/v1/join/…``) are called from
the App's own pages, on the App's origin: a JSON ``POST`` from another origin is sent only after
the browser's ``OPTIONS`` preflight allowed it, and its answer is readable only with
``Access-Control-Allow-Origin`` (Fetch standard). The join routes must be: their per-IP signup
allowance counts the visitor's address, which a page relaying them through the App's own server
would replace by the server's. No credentials (cookies) are involved, so ``*`` is safe and the
default (``REFCORE_CORS_ALLOW_ORIGIN`` names one origin instead).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

#: How long a browser may reuse a preflight's answer: a day.
MAX_AGE_SECONDS = 86400


@cache
def cors_headers(
    allow_origin: str, *, preflight_methods: str | None = None
) -> tuple[tuple[bytes, bytes], ...]:
    """The origin on every answer; what may be sent (``preflight_methods``, the path's methods),
    and for how long that holds, only on the preflight, the one answer browsers read them from.
    Encoded once: each capture appends them to its answer's raw headers, where setting them one by
    one through Starlette's ``MutableHeaders`` scanned the list each time."""
    headers = [(b"access-control-allow-origin", allow_origin.encode("latin-1"))]
    if preflight_methods is not None:
        headers += [
            (b"access-control-allow-methods", preflight_methods.encode("latin-1")),
            (b"access-control-allow-headers", b"Content-Type"),
            (b"access-control-max-age", str(MAX_AGE_SECONDS).encode("latin-1")),
        ]
    if allow_origin != "*":
        headers.append((b"vary", b"Origin"))
    return tuple(headers)


def allowed_methods(methods: Iterable[str]) -> str:
    """A path's methods as an ``Allow`` or ``Access-Control-Allow-Methods`` value, sorted: the
    same in every server process (Starlette keeps a route's methods in a set, whose order
    changes with each process's string hashing)."""
    return ", ".join(sorted(set(methods)))
