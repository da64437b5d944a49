"""A real HTTPS webhook receiver on loopback, in a thread, that checks requests as a receiver must.

Paths choose the behaviour:

- ``/ok``: verifies every header and the signature, records the verdict, answers 200;
- ``/slow``: answers 200 only after 5 seconds (or when the test ends);
- ``/redirect``: answers 302 to ``/target`` on the same server;
- ``/target``: the redirect's destination, which must never be hit;
- ``/error``: answers 500;
- ``/big``: answers 200 with 5000 bytes;
- ``/nul``: answers 200 with a NUL byte in the body (``ok\\x00ok``), which no PostgreSQL text keeps.

Every request is recorded (path, headers, raw body, verification problems) in arrival order.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from attrs import define, field

from tests.webhooks.pki import Pki

TOLERANCE_SECONDS = 300
SLOW_SECONDS = 5.0
#: What ``/gzip-bomb``'s few kilobytes inflate to, decoded as ``Content-Encoding: gzip, gzip`` says.
BOMB_INFLATED_BYTES = 64 * 1024 * 1024


@cache
def gzip_bomb() -> bytes:
    """Zeros gzipped twice: a body whose declared encoding inflates it some 100,000-fold."""
    return gzip.compress(gzip.compress(bytes(BOMB_INFLATED_BYTES), compresslevel=9), compresslevel=9)


class TlsThreadingServer(ThreadingHTTPServer):
    """HTTPS with the TLS handshake done in each connection's own thread.

    Wrapping the listening socket instead would run every handshake in the accept loop, one
    after another, so concurrent deliveries would queue behind each other's handshakes.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], pki: Pki) -> None:
        super().__init__(address, handler)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(pki.cert_path, pki.key_path)

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            connection = self.tls.wrap_socket(request, server_side=True)
        except OSError:
            return  # the client refused our certificate or went away
        try:
            self.RequestHandlerClass(connection, client_address, self)
        finally:
            connection.close()


@define
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    problems: list[str]

    @property
    def payload(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


def verification_problems(secret: str, headers: dict[str, str], body: bytes, now: float) -> list[str]:
    """What a careful receiver checks, from the raw body, before trusting anything."""
    problems: list[str] = []
    lowered = {k.lower(): v for k, v in headers.items()}
    if lowered.get("content-type") != "application/json":
        problems.append("content type")
    timestamp = lowered.get("x-service-webhook-timestamp", "")
    if not timestamp.isdigit() or abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        problems.append("timestamp outside tolerance")
    expected = "v1=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, lowered.get("x-service-webhook-signature", "")):
        problems.append("signature")
    if lowered.get("x-service-webhook-version") != "1":
        problems.append("version")
    try:
        payload = json.loads(body)
    except ValueError:
        return [*problems, "body is not JSON"]
    if lowered.get("x-service-webhook-id") != payload.get("id"):
        problems.append("id header")
    if lowered.get("x-service-webhook-event") != payload.get("type"):
        problems.append("event header")
    missing = {"id", "type", "created_at", "livemode", "app_id", "data"} - set(payload)
    if missing:
        problems.append(f"envelope misses {sorted(missing)}")
    return problems


@define
class Receiver:
    pki: Pki
    secret: str | None = None
    received: list[Received] = field(factory=list)
    sni_names: list[str | None] = field(factory=list)
    release: threading.Event = field(factory=threading.Event)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(factory=threading.Lock)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def hits(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path == path]

    def _record_sni(self, connection: Any, name: str | None, context: Any) -> None:
        with self._lock:
            self.sni_names.append(name)

    def record(self, item: Received) -> None:
        with self._lock:
            self.received.append(item)

    @contextmanager
    def running(self) -> Iterator[Receiver]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                headers = dict(self.headers.items())
                problems = (
                    verification_problems(receiver.secret, headers, body, time.time())
                    if receiver.secret is not None
                    else ["no secret configured in the test receiver"]
                )
                receiver.record(Received(path=self.path, headers=headers, body=body, problems=problems))
                if self.path == "/slow":
                    receiver.release.wait(SLOW_SECONDS)
                    self._answer(200, b"late")
                elif self.path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", receiver.url("/target"))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path == "/error":
                    self._answer(500, b"receiver exploded")
                elif self.path == "/big":
                    self._answer(200, b"x" * 5000)
                elif self.path == "/nul":
                    self._answer(200, b"ok\x00ok")
                elif self.path == "/gzip-bomb":
                    self._answer(200, gzip_bomb(), encoding="gzip, gzip")
                elif self.path == "/not-modified":
                    self.send_response(304)
                    self.end_headers()
                elif self.path == "/multiple-choices":
                    self._answer(300, b"pick one")
                else:
                    self._answer(200, b"ok")

            def _answer(self, status: int, text: bytes, encoding: str | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain")
                    if encoding is not None:
                        self.send_header("Content-Encoding", encoding)
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                except OSError:
                    pass  # the client gave up (time-out): nothing to answer

        server = TlsThreadingServer(("127.0.0.1", 0), Handler, self.pki)
        server.tls.sni_callback = self._record_sni
        self._server = server
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.release.set()
            server.shutdown()
            server.server_close()
            thread.join()
