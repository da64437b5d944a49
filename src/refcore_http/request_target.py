"""The request's path and query as sent, before the server's decoding could change their meaning.

uvicorn decodes the path's ``%``-escapes before routing, and Starlette the query's, both as
UTF-8 with any invalid byte replaced by U+FFFD. Two things then went wrong (probe Q):

- An encoded slash became a separator: ``POST /v1/programs/prg_…%2Fpause`` paused the program,
  while a reverse proxy or firewall that filters on the path saw one segment, not the route
  refcore ran. No path segment refcore routes (IDs, slugs, literal words) holds a slash, so
  ``%2F`` is refused, whatever the path.
- Bytes that are not UTF-8 (``%FF``, ``%C3%28``) became U+FFFD, and the request was answered
  for another value: ``404`` for an ID or ``program_id`` that nobody sent, an empty list.

Both are ``400 validation_error``, with a message that does not quote the caller's text. The
common case costs one substring search: a target with no ``%`` has nothing to decode.
"""

from __future__ import annotations

from urllib.parse import unquote_plus, unquote_to_bytes

from starlette.datastructures import QueryParams
from starlette.types import Scope

from refcore.credentials import shown
from refcore.errors import ValidationError


def check_path(scope: Scope) -> None:
    """``validation_error`` when the raw path holds an encoded slash or decodes to no UTF-8."""
    raw: bytes | None = scope.get("raw_path")
    if not raw or b"%" not in raw:
        return
    if b"%2f" in raw.lower():
        raise ValidationError("The path holds an encoded slash (%2F), which no segment of a route takes")
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("The path is not UTF-8 once its %-escapes are decoded") from None


def strict_query(scope: Scope) -> QueryParams:
    """The query's parameters, as Starlette parses them (``&``-separated, ``+`` for a space,
    blank values kept), but ``validation_error`` naming the parameter whose name or value is
    not UTF-8 once decoded, instead of a U+FFFD in its place."""
    raw = scope.get("query_string", b"").decode("latin-1")
    if "%" not in raw:
        return QueryParams(raw)
    pairs: list[tuple[str, str]] = []
    for part in raw.split("&"):
        if not part:
            continue
        raw_name, _, raw_value = part.partition("=")
        try:
            name = unquote_plus(raw_name, errors="strict")
        except UnicodeDecodeError:
            raise ValidationError("A query parameter's name is not UTF-8 once decoded") from None
        try:
            value = unquote_plus(raw_value, errors="strict")
        except UnicodeDecodeError:
            raise ValidationError(
                f"{shown(name)} is not UTF-8 once its %-escapes are decoded", param=shown(name)
            ) from None
        pairs.append((name, value))
    return QueryParams(pairs)
