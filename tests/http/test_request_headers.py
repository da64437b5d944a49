"""``refcore_http.request_headers``: the lookup refcore uses answers as Starlette's ``Headers.get``."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from refcore_http.request_headers import header

RAW = [
    (b"host", b"refcore.example"),
    (b"content-type", b"application/json"),
    (b"x-forwarded-for", b"203.0.113.7"),
    (b"x-forwarded-for", b"198.51.100.1"),
    (b"user-agent", "Navigateur/1.0 (\u00e9t\u00e9)".encode("latin-1")),
]


def request(raw: list[tuple[bytes, bytes]]) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/v1/capture", "headers": raw})


@pytest.mark.parametrize(
    "name", ["host", "content-type", "x-forwarded-for", "user-agent", "authorization", "content-length"]
)
def test_a_header_reads_as_starlettes_headers_get_reads_it(name: str) -> None:
    """Present, absent, sent twice (the first value) and not ASCII (latin-1) alike."""
    assert header(request(RAW), name.encode("ascii")) == request(RAW).headers.get(name)


def test_a_header_sent_twice_answers_with_its_first_value() -> None:
    assert header(request(RAW), b"x-forwarded-for") == "203.0.113.7"


def test_each_request_looks_up_its_own_headers() -> None:
    """The dictionary lives in the request's own scope, never shared with another request."""
    first = request([(b"authorization", b"Bearer key_one")])
    second = request([(b"authorization", b"Bearer key_two")])

    assert header(first, b"authorization") == "Bearer key_one"
    assert header(second, b"authorization") == "Bearer key_two"
    assert header(second, b"content-type") is None
