"""``read_body`` reads a request's ASGI messages itself (not through Starlette's ``stream()``):
every chunk in order, a disconnect as Starlette reports it, and nothing past the size limit."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import ClientDisconnect, Request

from refcore.errors import BodyTooLarge, InvalidJson
from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.bodies import read_body
from refcore_http.settings import Settings
from tests.http.asgi_calls import asgi_call
from tests.http.world import Client, expect, new_tenant


class Messages:
    """A request's ``receive`` channel that hands out ``messages`` and counts what was taken."""

    def __init__(self, messages: Sequence[dict[str, Any]]) -> None:
        self._messages = list(messages)
        self.taken = 0

    async def __call__(self) -> dict[str, Any]:
        message = self._messages[self.taken]
        self.taken += 1
        return message


def _request(receive: Messages, headers: Sequence[tuple[bytes, bytes]] = ()) -> Request:
    scope = {"type": "http", "method": "POST", "path": "/v1/capture", "headers": list(headers)}
    return Request(scope, receive)


def _chunks(parts: Sequence[bytes]) -> list[dict[str, Any]]:
    last = len(parts) - 1
    return [{"type": "http.request", "body": part, "more_body": i < last} for i, part in enumerate(parts)]


@given(st.lists(st.binary(max_size=64), min_size=1, max_size=8))
def test_a_body_sent_in_chunks_is_read_whole_in_order(parts: list[bytes]) -> None:
    receive = Messages(_chunks(parts))
    assert asyncio.run(read_body(_request(receive))) == b"".join(parts)
    assert receive.taken == len(parts)


def test_a_message_without_a_body_key_is_an_empty_last_chunk() -> None:
    receive = Messages([{"type": "http.request", "body": b"{}", "more_body": True}, {"type": "http.request"}])
    assert asyncio.run(read_body(_request(receive))) == b"{}"


def test_a_client_that_leaves_mid_body_is_a_disconnect_as_starlette_reports_it() -> None:
    first = {"type": "http.request", "body": b"{", "more_body": True}
    receive = Messages([first, {"type": "http.disconnect"}])
    with pytest.raises(ClientDisconnect):
        asyncio.run(read_body(_request(receive)))


def test_a_body_over_the_limit_is_refused_without_reading_further_chunks() -> None:
    receive = Messages(_chunks([b"x" * 6, b"x" * 6, b"x" * 6, b"x"]))
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(_request(receive), limit=10))
    assert receive.taken == 2


def test_a_declared_length_over_the_limit_is_refused_before_any_chunk_is_read() -> None:
    receive = Messages(_chunks([b"x" * 20]))
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(_request(receive, [(b"content-length", b"20")]), limit=10))
    assert receive.taken == 0


def test_a_body_exactly_at_the_limit_is_read() -> None:
    receive = Messages(_chunks([b"x" * 4, b"x" * 6]))
    assert asyncio.run(read_body(_request(receive), limit=10)) == b"x" * 10


def test_a_body_read_again_is_the_same_bytes_without_reading_the_channel_again() -> None:
    """A shortcut that reads the body and hands the request back leaves it to the pipeline."""
    receive = Messages(_chunks([b'{"via":', b'"abc"}']))
    request = _request(receive)
    first = asyncio.run(read_body(request))
    assert asyncio.run(read_body(request)) == first == b'{"via":"abc"}'
    assert receive.taken == 2


@pytest.mark.parametrize(
    "headers",
    [
        [(b"content-encoding", b"gzip")],
        [(b"content-encoding", b"br")],
        [(b"content-encoding", b"identity"), (b"content-encoding", b"gzip")],
        [(b"content-type", b"application/json"), (b"content-type", b"text/plain")],
        [(b"content-type", b"application/json"), (b"content-type", b"application/json")],
    ],
    ids=["gzip", "br", "identity then gzip", "json then text", "json twice"],
)
def test_a_body_whose_headers_refcore_would_not_honour_is_invalid_json(
    headers: list[tuple[bytes, bytes]],
) -> None:
    """Probe Q: ``Content-Encoding: gzip`` was ignored (the body read as if not compressed), and
    of two ``Content-Type`` headers the first won; a proxy reading the other sees another body."""
    receive = Messages(_chunks([b'{"via": "x"}']))
    with pytest.raises(InvalidJson):
        asyncio.run(read_body(_request(receive, headers)))
    assert receive.taken == 0  # refused before a chunk is read


def test_an_identity_content_encoding_is_the_body_as_sent() -> None:
    receive = Messages(_chunks([b"{}"]))
    headers = [(b"content-encoding", b"Identity"), (b"content-type", b"application/json")]
    assert asyncio.run(read_body(_request(receive, headers))) == b"{}"


def test_a_capture_sent_with_a_content_encoding_records_no_click(client: Client, runtime: Runtime) -> None:
    acme = new_tenant(client, runtime, "acme")
    for token in (None, acme.live_key):  # the public shortcut and the keyed pipeline
        refused = client.post(
            "/v1/capture", token, {"via": acme.link_code}, headers={"Content-Encoding": "gzip"}
        )
        expect(refused, 400, "invalid_json")
    assert expect(client.get("/v1/clicks", acme.live_key), 200)["data"] == []


def test_a_client_that_leaves_mid_body_writes_no_error_to_the_log(
    runtime: Runtime, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """A disconnect is the client's doing, not the server's fault: it had been logged as an
    ``Unhandled error`` with its traceback, 11 lines anyone could write without a key by
    closing a capture's connection mid-body (probe AA). Nothing is recorded either."""
    app = create_app(runtime, settings)
    receive = Messages(
        [{"type": "http.request", "body": b'{"via":', "more_body": True}, {"type": "http.disconnect"}]
    )
    headers = [(b"host", b"x"), (b"content-type", b"application/json"), (b"content-length", b"100")]
    with caplog.at_level(logging.INFO):
        sent = asgi_call(app, "POST", "/v1/capture", headers=headers, receive=receive)
    assert receive.taken == 2
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert sent[0]["status"] == 400  # never read by the client, which has gone
    assert not runtime.read(lambda tx: tx.uow.clicks.find_all({}))
