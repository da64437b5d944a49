"""``refcore serve``'s HTTP protocol: a request's head is bounded, and so is the time a client may
take to send a request (refcore_http.http_protocol; probe V held every file descriptor with silent
connections and gigabytes of memory with heads that never ended).

Each test runs a real uvicorn server with the protocol, over a real socket, with short limits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from refcore_http import http_protocol
from refcore_http.http_protocol import GuardedHttpToolsProtocol

HEAD_LIMIT = 4096
#: Long enough that a test's own pauses (0.2 s) stay well inside it on a loaded machine.
REQUEST_SECONDS = 1.0
KEEP_ALIVE_SECONDS = 2
#: Longer than any deadline of these tests, plus the sweep: a socket still open then was kept.
WAIT_SECONDS = 5.0


class _ShortLimits(GuardedHttpToolsProtocol):
    max_head_bytes = HEAD_LIMIT
    request_seconds = REQUEST_SECONDS


async def _echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"bytes": len(body)})


async def _headers_after_body(request: Request) -> JSONResponse:
    """The request's header names once its whole body (and a chunked body's trailer) is in."""
    await request.body()
    return JSONResponse({"headers": [name.decode() for name, _ in request.scope["headers"]]})


#: An answer far larger than the kernel's socket buffers on both sides can hold.
LARGE_ANSWER = 64 * 1024 * 1024


async def _large(_request: Request) -> Response:
    return Response(b"L" * LARGE_ANSWER, media_type="application/octet-stream")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[uvicorn.Server]:
    monkeypatch.setattr(http_protocol, "SWEEP_SECONDS", 0.05)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        Starlette(
            routes=[
                Route("/echo", _echo, methods=["GET", "POST"]),
                Route("/large", _large),
                Route("/headers", _headers_after_body, methods=["POST"]),
            ]
        ),
        http=_ShortLimits,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        log_level="critical",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_SECONDS
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    server.config.port = listening.getsockname()[1]  # where the tests connect
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(WAIT_SECONDS)
        listening.close()


@pytest.fixture
def port(server: uvicorn.Server) -> int:
    return server.config.port


def _connect(port: int) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS)
    return connection


def _closed_within(connection: socket.socket, seconds: float) -> bytes:
    """Everything the server sent until it closed the connection; fails if it stays open."""
    connection.settimeout(seconds)
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def _request(path: str = "/echo", body: bytes = b"", extra: bytes = b"") -> bytes:
    method = b"POST" if body else b"GET"
    return (
        method
        + b" "
        + path.encode()
        + b" HTTP/1.1\r\nhost: x\r\n"
        + extra
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


def _answer(connection: socket.socket) -> tuple[int, dict[str, object]]:
    """One whole answer read off the connection: its status and JSON body."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[
            1
        ]
    )
    while len(body) < length:
        body += connection.recv(65536)
    return int(head.split(b" ")[1]), json.loads(body)


def test_a_connection_that_sends_nothing_closes_after_the_keep_alive_timeout(port: int) -> None:
    with _connect(port) as connection:
        started = time.monotonic()
        assert _closed_within(connection, WAIT_SECONDS) == b""
        assert KEEP_ALIVE_SECONDS - 0.1 <= time.monotonic() - started < WAIT_SECONDS


def test_a_head_that_never_ends_closes_after_the_request_deadline_and_others_are_served(port: int) -> None:
    with _connect(port) as slow, _connect(port) as other:
        slow.sendall(b"GET /echo HTTP/1.1\r\nhost: x\r\nx-a: ")
        started = time.monotonic()
        for _ in range(3):  # a byte now and then does not move the deadline
            time.sleep(0.1)
            slow.sendall(b"a")
        other.sendall(_request())
        assert _answer(other) == (200, {"bytes": 0})
        assert _closed_within(slow, WAIT_SECONDS) == b""
        assert REQUEST_SECONDS - 0.1 <= time.monotonic() - started < WAIT_SECONDS


def test_a_body_that_never_ends_closes_after_the_request_deadline(port: int) -> None:
    with _connect(port) as connection:
        connection.sendall(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\nabc")
        assert _closed_within(connection, WAIT_SECONDS) == b""


def test_a_head_still_arriving_past_the_limit_is_refused_in_the_envelope_and_closed(port: int) -> None:
    """Counted read by read once the parser has taken each: a head that has not ended when its
    reads pass the limit is refused (one that ends within the read that passes it is served:
    the limit bounds what the parser gathers, give or take one read)."""
    with _connect(port) as connection:
        connection.sendall(b"GET /echo HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * (HEAD_LIMIT - 100))
        time.sleep(0.1)  # two reads on the server's side
        connection.sendall(b"a" * 200)
        received = _closed_within(connection, WAIT_SECONDS)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert json.loads(body) == {
        "error": {
            "code": "validation_error",
            "message": f"The request line and headers exceed {http_protocol.MAX_HEAD_BYTES} bytes",
        }
    }


def test_pipelined_requests_longer_than_the_head_limit_in_one_read_are_all_served(port: int) -> None:
    """Probe W: 2,000 pipelined requests in one send had been taken for one long head."""
    request = _request()
    count = HEAD_LIMIT // len(request) * 3
    with _connect(port) as connection:
        connection.sendall(request * count)
        received = b""
        while received.count(b"HTTP/1.1 200 ") < count:
            chunk = connection.recv(65536)
            assert chunk, f"closed after {received.count(b'HTTP/1.1 200 ')} answers of {count}"
            received += chunk
    assert received.count(b"HTTP/1.1 ") == count


def test_a_chunked_trailer_that_keeps_coming_is_cut_off(port: int) -> None:
    """httptools gathers a trailer as it does a header, by concatenation (probe W: 64 MiB)."""
    with _connect(port) as connection:
        connection.sendall(
            b"POST /echo HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nx-t: "
        )
        sent = 0
        with contextlib.suppress(OSError):
            while sent < 8 * http_protocol.MAX_REQUEST_BYTES:
                connection.sendall(b"a" * 65536)
                sent += 65536
        assert sent < 8 * http_protocol.MAX_REQUEST_BYTES  # the server closed long before


def test_a_chunked_bodys_trailer_fields_never_become_request_headers(port: int) -> None:
    """httptools reports a trailer's fields as it does the head's, and uvicorn had added them to
    the request's headers: a public capture whose trailer carried a Test key was recorded in
    Test mode, a list read with its session in a trailer alone was answered, and a trailer's
    ``X-Forwarded-For`` replaced the head's behind a trusted proxy (probe AA). The head, which a
    proxy or firewall judges, is the whole of what the request says; trailers are dropped, as
    RFC 9110 (6.5.1) lets a recipient do."""
    with _connect(port) as connection:
        connection.sendall(
            b"POST /headers HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n"
            b"authorization: Bearer key_test_x\r\nx-forwarded-for: 6.6.6.6\r\n\r\n"
        )
        status, body = _answer(connection)
    assert status == 200
    assert body["headers"] == ["host", "transfer-encoding"]


def test_a_client_that_expects_100_continue_is_told_to_send_its_body(port: int) -> None:
    """The protocol reads the head's fields itself (it drops a trailer's), ``Expect`` included."""
    with _connect(port) as connection:
        connection.sendall(
            b"POST /echo HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n"
        )
        interim = b""
        while b"\r\n\r\n" not in interim:
            chunk = connection.recv(65536)
            assert chunk, "closed without telling the client to send its body"
            interim += chunk
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n")
        connection.sendall(b"{}")
        assert _answer(connection) == (200, {"bytes": 2})


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"get /echo HTTP/1.1\r\nhost: x\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}",
        b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n{}",
        b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: +2\r\n\r\n{}",
    ],
    ids=["lower-case method", "two lengths", "length and chunked", "signed length"],
)
def test_a_request_the_parser_refuses_is_answered_in_the_error_envelope(
    port: int, request_bytes: bytes
) -> None:
    """uvicorn answered these ``text/plain``; api.md promises the envelope for every failure."""
    with _connect(port) as connection:
        connection.sendall(request_bytes)
        received = _closed_within(connection, WAIT_SECONDS)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    assert json.loads(body)["error"]["code"] == "validation_error"


def test_a_slow_upload_that_keeps_coming_is_not_cut_off(port: int) -> None:
    """A body's deadline counts from its last progress, as nginx's ``client_body_timeout``."""
    body = b"b" * 1000
    with _connect(port) as connection:
        connection.sendall(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n" % len(body))
        for start in range(0, len(body), 100):  # 2 s in all, past the 1 s deadline
            time.sleep(0.2)
            connection.sendall(body[start : start + 100])
        assert _answer(connection) == (200, {"bytes": len(body)})


def test_a_head_over_the_limit_sent_a_few_bytes_at_a_time_is_refused_once_it_passes(port: int) -> None:
    with _connect(port) as connection:
        connection.sendall(b"GET /echo HTTP/1.1\r\nhost: x\r\n")
        for _ in range(HEAD_LIMIT // 512 + 1):
            try:
                connection.sendall(b"x-many: " + b"b" * 500 + b"\r\n")
            except OSError:
                break  # the server has answered and closed
        assert _closed_within(connection, WAIT_SECONDS).startswith(b"HTTP/1.1 400 ")


def test_a_refused_client_still_sending_reads_the_answer_not_a_reset(port: int) -> None:
    """The connection of a refused request closes lingering: closed at once with the client's
    bytes unread, the kernel reset it, which can discard the answer before the client reads it.
    The test above failed so once in a fresh-clone CI (``ConnectionResetError``); the timing
    that loses the answer is rare, and this machine does not bring it on demand."""
    with _connect(port) as connection:
        # Far more than one read of the server's, some still unread when it refuses; a reset
        # here is what the assertion below reports.
        with contextlib.suppress(OSError):
            connection.sendall(b"GET /echo HTTP/1.1\r\nhost: x\r\nx-big: " + b"b" * (4 * 1024 * 1024))
        assert _closed_within(connection, WAIT_SECONDS).startswith(b"HTTP/1.1 400 ")


def test_a_body_larger_than_the_head_limit_in_one_send_and_keep_alive_requests_are_served(port: int) -> None:
    """Only the head is counted: a body arriving with it is not, and the next request on the
    connection starts with a count and a deadline of its own."""
    body = b"z" * (HEAD_LIMIT * 4)
    with _connect(port) as connection:
        connection.sendall(_request(body=body, extra=b"x-fill: " + b"c" * (HEAD_LIMIT - 100) + b"\r\n"))
        assert _answer(connection) == (200, {"bytes": len(body)})
        time.sleep(REQUEST_SECONDS + 0.2)  # idle past a request's deadline, within keep-alive
        connection.sendall(_request(extra=b"x-fill: " + b"c" * (HEAD_LIMIT - 100) + b"\r\n"))
        assert _answer(connection) == (200, {"bytes": 0})


def test_an_answer_the_client_stops_reading_ends_its_connection_after_the_deadline(
    server: uvicorn.Server, port: int
) -> None:
    """``close`` would wait for the client to read the buffered answer: the connection is
    aborted instead, and the server's buffer goes with it (what the kernel had taken of it
    still reaches the client, so the server's side is what is checked)."""
    with _connect(port) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        connection.sendall(_request("/large"))
        deadline = time.monotonic() + WAIT_SECONDS
        while not server.server_state.connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.server_state.connections  # answering, the client reading nothing
        while server.server_state.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.server_state.connections


def test_a_websocket_upgrade_is_answered_as_any_request_and_logs_nothing(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="uvicorn.error"), _connect(port) as connection:
        connection.sendall(
            b"GET /echo HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n"
        )
        assert _answer(connection) == (200, {"bytes": 0})
    assert not [r for r in caplog.records if r.name.startswith("uvicorn")], caplog.text


def test_an_answer_read_slowly_but_steadily_is_not_cut_off(server: uvicorn.Server, port: int) -> None:
    """Progress is the transport's buffer shrinking: uvloop's resume comes only once nearly all
    of it is drained, and a reader under 30 KB/s had been cut off mid-logo (probe W)."""
    with _connect(port) as connection:
        connection.sendall(_request("/large"))
        received = 0
        until = time.monotonic() + 4 * REQUEST_SECONDS
        while time.monotonic() < until:  # about 10 MB/s: the buffer shrinks between sweeps
            received += len(connection.recv(1024 * 1024))
            time.sleep(0.1)
        assert server.server_state.connections, "the server ended a connection that was reading"
        assert 0 < received < LARGE_ANSWER
