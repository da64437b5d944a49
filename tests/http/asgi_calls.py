"""One ASGI call of an app, in-process and without a client: for tests that must hand the app
messages no HTTP client sends (a disconnect mid-body) or that compare two apps call by call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from starlette.types import ASGIApp, Message, Scope


async def _empty_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def asgi_call(
    app: ASGIApp,
    method: str,
    path: str,
    *,
    headers: Sequence[tuple[bytes, bytes]] = ((b"host", b"testserver"),),
    receive: Callable[[], Awaitable[Message]] = _empty_body,
) -> list[Message]:
    """Every message ``app`` sent in answer to ``method path`` (its start first)."""
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": list(headers),
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent
