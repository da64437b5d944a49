"""The ceiling: a bare Starlette endpoint returning a small JSON object.

It runs under exactly the uvicorn call ``refcore serve`` makes (:func:`refcore_http.cli.serve`):
one process, uvicorn's default loop, its httptools protocol with refcore's limits on a request's
head and time (:mod:`refcore_http.http_protocol`), ``proxy_headers=False``,
``server_header=False``, refcore's default keep-alive timeout, the same log level and the access
log off where that level would drop its lines (:func:`refcore_http.logs.access_log_shown`), so
the ratio to it measures what refcore adds on top of the stack it stands on, nothing else.
"""

from __future__ import annotations

import argparse

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from refcore_http.http_protocol import GuardedHttpToolsProtocol
from refcore_http.logs import access_log_shown
from refcore_http.settings import Settings


async def answer(_request: Request) -> JSONResponse:
    return JSONResponse({"object": "ceiling", "ok": True})


def create_app() -> Starlette:
    return Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST"])])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ceiling")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    uvicorn.run(
        create_app(),
        host=args.host,
        port=args.port,
        http=GuardedHttpToolsProtocol,
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=Settings().keep_alive_seconds,
        log_level=args.log_level,
        access_log=access_log_shown(args.log_level),
    )


if __name__ == "__main__":
    main()
