"""uvicorn's httptools protocol with the limits on a client's request that uvicorn lacks.

uvicorn closes a connection that stays idle after a response (``timeout_keep_alive``), and
nothing else: a connection that never sends a request, or sends one slowly, stays open for good,
and httptools gathers a request's head however long it grows. One client without a key had used
every file descriptor of the server with 20,000 silent connections, taken its memory from 339 MB
to 3.78 GB in ten seconds with thirty requests whose heads never ended, and stalled every other
client for seconds with one header value of 300 MiB, which httptools gathers by concatenation
(probe V). :class:`GuardedHttpToolsProtocol` adds:

- **A request's head is at most** :data:`MAX_HEAD_BYTES`, **and a request at most**
  :data:`MAX_REQUEST_BYTES` on the wire (which bounds a chunked body's trailer, gathered as a
  header is). Counted read by read once the parser has taken each, and only reads wholly
  inside one request, so that pipelined requests are never taken for one long head: soft by
  one read, which still bounds what the parser gathers. A head still arriving past its limit
  is answered ``400 validation_error`` and its connection closed.
- **Deadlines.** A new connection that sends nothing is closed after the keep-alive timeout, as an
  idle one is after a response (``REFCORE_KEEP_ALIVE_SECONDS`` now means what it says); a
  request's head must arrive within :data:`REQUEST_SECONDS` of its first byte, and its body
  may make no progress for as long (nginx's ``client_header_timeout`` and
  ``client_body_timeout``), or its connection is closed. Once received, a request takes as
  long as its answer takes, but an answer of which the client reads nothing (the transport's
  buffer does not shrink) for :data:`REQUEST_SECONDS` ends its connection, buffer and all: a
  thousand connections that never read a 1 MiB logo had held 1.9 GB until their clients went
  away. One timer a server checks every connection's deadlines each :data:`SWEEP_SECONDS`,
  rather than a timer a request: a request costs a reading of the loop's clock and a few
  attribute writes (about 10 thousand instructions, bench/history.md).
- **No warning for a WebSocket upgrade**, which anyone could ask for to write the log.
- **A chunked body's trailer fields are dropped**, never added to the request's headers.
- **What the parser refuses is answered in the error envelope**, not uvicorn's plain text.
- **A refused request's connection closes lingering** (RFC 9112, 9.6): the answer is written,
  the writing side shut, and what the client still sends read and dropped until it closes or
  :data:`LINGER_SECONDS` pass. Closed at once, with the client's bytes still unread, the kernel
  answered them with a reset, which could reach the client before the answer and discard it.

The number of connections is not bounded here: behind a load balancer it bounds them, and a
server facing clients directly should have a proxy in front that does (docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from refcore_http.errors import error_response

#: The most bytes a request's line and headers may take (nginx allows 32 KiB of headers by
#: default, Node.js 16 KiB): what browsers and HTTP clients send is a small part of it.
MAX_HEAD_BYTES = 64 * 1024
#: How long a client may take to send a request's head, from its first byte, and how long its
#: body, or its reading of an answer, may make no progress.
REQUEST_SECONDS = 30.0
#: The most bytes a request may take on the wire: a 1 MiB body, its head, and room for a
#: chunked body's framing. A chunked body's trailer, which httptools gathers by concatenation
#: as it does a header, is bounded by it (probe W sent 64 MiB of one).
MAX_REQUEST_BYTES = 4 * 1024 * 1024
#: How often the deadlines are checked: a connection past its deadline closes within this.
SWEEP_SECONDS = 1.0
#: How long a refused request's connection keeps reading (and dropping) what the client sends
#: after the answer, before it closes (see the module docstring).
LINGER_SECONDS = 2.0

#: Servers whose connections a sweep checks already (one sweep each).
_SWEPT: weakref.WeakSet[ServerState] = weakref.WeakSet()


def _refusal(message: str) -> bytes:
    """The whole answer ``400 validation_error`` with ``message``, in the error envelope,
    closing the connection: for a request refused before it reaches the app."""
    body = error_response(400, "validation_error", message).body
    return b"".join(
        [
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n",
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body),
            body,
        ]
    )


_HEAD_TOO_LARGE = _refusal(f"The request line and headers exceed {MAX_HEAD_BYTES} bytes")
#: What the parser refuses (a method in lower case, ``Transfer-Encoding`` with
#: ``Content-Length``, two lengths, ``Content-Length: +18``): uvicorn answered it in plain text.
_NOT_HTTP = _refusal("The request is not valid HTTP/1.1")


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """``refcore serve``'s HTTP protocol (uvicorn's ``http=``); see the module docstring."""

    max_head_bytes = MAX_HEAD_BYTES
    max_request_bytes = MAX_REQUEST_BYTES
    request_seconds = REQUEST_SECONDS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        #: Bytes of the current request received so far, in reads that held nothing else.
        self.request_bytes = 0
        self.in_head = True
        self.receiving = False
        #: Whether a request ended in the read being parsed (its counts then start again).
        self.completed = False
        #: A refusal has been answered: what arrives now is dropped (:meth:`_refuse`).
        self.lingering = False
        #: When the connection closes unless its request has arrived whole (``None``: no limit).
        self.deadline: float | None = self.loop.time() + self.timeout_keep_alive
        #: When the connection ends unless the client has read some of its answer meanwhile, and
        #: how much of it the transport held then.
        self.write_deadline: float | None = None
        self.write_buffered = 0
        if self.server_state not in _SWEPT:
            _SWEPT.add(self.server_state)
            self.loop.call_later(SWEEP_SECONDS, _sweep, self.loop, self.server_state)

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            return
        if not self.receiving:
            self.receiving = True
            self.deadline = self.loop.time() + self.request_seconds
        elif not self.in_head:
            # A body (or a chunked body's trailer) counts from its last progress, as nginx's
            # ``client_body_timeout`` does: a slow upload that keeps coming is not cut off.
            self.deadline = self.loop.time() + self.request_seconds
        self.completed = False
        super().data_received(data)
        if self.completed or self.lingering or self.transport.is_closing():
            return  # a read that ended a request (pipelined ones too) starts the counts again
        # Counted after the parser took the read: only reads wholly inside one request count,
        # so a burst of pipelined requests is never taken for one long head. The limits are
        # soft by one read (at most 256 KiB), which bounds what the parser gathers all the same.
        self.request_bytes += len(data)
        if self.in_head and self.request_bytes > self.max_head_bytes:
            self._refuse(_HEAD_TOO_LARGE)
        elif self.request_bytes > self.max_request_bytes:
            self.transport.close()  # a chunked body's trailer, which the parser gathers whole

    def send_400_response(self, msg: str) -> None:
        """The parser's refusal in the error envelope, like every other failure (``docs/api.md``),
        where uvicorn answered ``text/plain`` (probe AA)."""
        self._refuse(_NOT_HTTP)

    def _refuse(self, answer: bytes) -> None:
        """Write ``answer``, shut the writing side, and drop what still arrives until the client
        closes or :data:`LINGER_SECONDS` pass (the sweep then closes the connection)."""
        self.transport.write(answer)
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        if self.cycle is not None and not self.cycle.response_complete:
            # An earlier request still being answered (pipelined) writes nothing more, as when the
            # connection closed at once: nothing may be written after the writing side is shut.
            self.cycle.disconnected = True
        self.lingering = True
        self.write_deadline = None
        self.deadline = self.loop.time() + LINGER_SECONDS

    def pause_writing(self) -> None:
        super().pause_writing()
        self.write_deadline = self.loop.time() + self.request_seconds
        self.write_buffered = self.transport.get_write_buffer_size()

    def resume_writing(self) -> None:
        super().resume_writing()
        self.write_deadline = None

    def _unsupported_upgrade_warning(self) -> None:
        """Nothing: refcore serves no WebSocket, and a request asking for one is answered as any
        other. uvicorn logged two warnings for each, 183 bytes: sixteen connections asking
        wrote 10.7 MB of log in ten seconds (probe V)."""

    def on_header(self, name: bytes, value: bytes) -> None:
        """A field of the head; a chunked body's trailer field (after the head) is dropped.

        httptools reports both alike, and uvicorn added a trailer's fields to the request's
        headers, which the request's handler may read after its body: a credential, a
        ``Content-Type`` or an ``X-Forwarded-For`` sent in a trailer alone had counted, around
        the head that a proxy or a firewall judges (probe AA). RFC 9110 (6.5.1) lets a recipient
        discard trailer fields, and refcore reads none.

        uvicorn's own four lines, not a call of them: ``super()`` a header had cost the ceiling
        8 thousand instructions a request, 3.4 % (``python -m bench.instructions``)."""
        if self.in_head:
            name = name.lower()
            if name == b"expect" and value.lower() == b"100-continue":
                self.expect_100_continue = True
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.in_head, self.request_bytes, self.receiving, self.deadline = True, 0, False, None
        self.completed = True


def _sweep(loop: asyncio.AbstractEventLoop, state: ServerState) -> None:
    """Close every connection of ``state`` past its deadline, then check again later."""
    now = loop.time()
    for protocol in list(state.connections):
        deadline: Any = getattr(protocol, "deadline", None)
        if deadline is not None and deadline <= now and not protocol.transport.is_closing():
            protocol.transport.close()
        if getattr(protocol, "write_deadline", None) is not None:
            _check_write(protocol, now)
    loop.call_later(SWEEP_SECONDS, _sweep, loop, state)


def _check_write(protocol: Any, now: float) -> None:
    """Abort a connection whose client has read nothing of its answer since the deadline was
    set: the transport holds no less of it. Progress (the buffer shrinking) moves the deadline,
    so a slow reader is never cut off; only uvloop's resume, once nearly all is drained, had,
    and a reader under 30 KB/s got a truncated logo (probe W). ``close`` would wait for the
    client to read it all."""
    buffered = protocol.transport.get_write_buffer_size()
    if buffered < protocol.write_buffered:
        protocol.write_buffered = buffered
        protocol.write_deadline = now + protocol.request_seconds
    elif protocol.write_deadline <= now:
        protocol.transport.abort()
