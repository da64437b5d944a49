"""Errors on the wire: the one table from error kind to HTTP status, and the one envelope.

Every failure, including routing (404, 405) and unexpected exceptions (500), answers
``{"error": {"code", "message", "param"?}}``. A 500 says only that something failed: the
exception's text and traceback go to the server log, never to the client.
"""

from __future__ import annotations

import logging
import secrets

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from refcore.credentials import without_credentials
from refcore.errors import ErrorKind, RateLimited, RefcoreError
from refcore_http.cors import allowed_methods, cors_headers
from refcore_http.json_response import JsonResponse
from refcore_http.logs import redacted
from refcore_http.request_target import check_path

log = logging.getLogger("refcore_http")

#: Decisions 8: the status of every error family.
STATUS_OF_KIND: dict[ErrorKind, int] = {
    ErrorKind.INVALID_INPUT: 400,
    ErrorKind.UNAUTHENTICATED: 401,
    ErrorKind.FORBIDDEN: 403,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.METHOD_NOT_ALLOWED: 405,
    ErrorKind.CONFLICT: 409,
    ErrorKind.TOO_LARGE: 413,
    ErrorKind.RATE_LIMITED: 429,
    ErrorKind.INTERNAL: 500,
}


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JsonResponse:
    error: dict[str, str] = {"code": code, "message": _sendable(message)}
    if param is not None:
        error["param"] = _sendable(param)
    return JsonResponse({"error": error}, status_code=status, headers=headers)


def _sendable(text: str) -> str:
    """What an error may say: no credential (``refcore.credentials.without_credentials``), and
    text JSON can carry (:func:`writable`)."""
    return writable(without_credentials(text))


def writable(text: str) -> str:
    """``text`` with any unpaired surrogate written as its escape (``\\ud800``).

    A refusal may quote what the caller sent, a member name included, and JSON escapes let a
    body carry a lone surrogate, which no UTF-8 encoder writes: the refusal of ``{"\\ud800": 1}``
    failed to render and answered ``500`` on every route, with no credential needed on the
    public ones (probe H). What the caller sent comes back as the escape it sent."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def refcore_error_response(exc: RefcoreError, *, logged_as: str | None = None) -> JsonResponse:
    """``exc`` in the envelope; ``logged_as``: the reference of the log line an ``internal_error``
    was written to (:func:`log_unhandled`), which the message then names."""
    status = STATUS_OF_KIND[exc.kind]
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if isinstance(exc, RateLimited) and exc.retry_after_seconds is not None:
        headers = {"Retry-After": str(exc.retry_after_seconds)}
    message = exc.message if logged_as is None else f"{exc.message} (logged as {logged_as})"
    return error_response(status, exc.code, message, param=exc.param, headers=headers)


def internal_error_response(logged_as: str) -> JsonResponse:
    return error_response(
        500, "internal_error", f"An unexpected error occurred; it has been logged as {logged_as}"
    )


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    """Starlette's own routing errors: no route (404), wrong method (405)."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # The path's ``PathEndpoint``, which Starlette found by the path alone.
        route = getattr(request.scope.get("endpoint"), "__self__", None)
        if "Allow" in headers:
            headers["Allow"] = allowed_methods(method.strip() for method in headers["Allow"].split(","))
        response = error_response(
            405, "method_not_allowed", f"{request.method} is not allowed here", headers=headers
        )
        if getattr(route, "cors", False):  # a browser reads this error too (capture, join)
            response.raw_headers += cors_headers(request.app.state.settings.cors_allow_origin)
        return response
    if exc.status_code == 404:
        try:
            check_path(request.scope)  # no route for what the server decoded: say why
        except RefcoreError as refused:
            return refcore_error_response(refused)
        # The path as the access log writes it: a key pasted into a URL is not sent back.
        return error_response(404, "not_found", f"No route for {redacted(request.url.path)}", headers=headers)
    # Starlette raises nothing else on refcore's routes; keep the status, use a catalog code.
    code = "internal_error" if exc.status_code >= 500 else "validation_error"
    return error_response(exc.status_code, code, str(exc.detail), headers=headers)


def log_unhandled(method: str, path: str, exc: BaseException) -> str:
    """The server log's one line (and traceback) for an error no catalog entry answers; the
    client sees only ``internal_error``, with the reference returned here (``err_`` and 16 hex
    digits, random), which the line carries too: an operator finds the line a client quotes
    among the server's, where "it has been logged" had left them to match it by the minute."""
    reference = f"err_{secrets.token_hex(8)}"
    log.error("Unhandled error in %s %s, logged as %s", method, path, reference, exc_info=exc)
    return reference


async def unhandled_exception_handler(request: Request, exc: Exception) -> Response:
    """Last resort for anything that escaped the endpoint dispatcher (which handles its own)."""
    return internal_error_response(log_unhandled(request.method, request.url.path, exc))
