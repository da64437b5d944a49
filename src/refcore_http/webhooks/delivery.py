"""One webhook delivery attempt (interface 6.4, decisions 7).

The rules, each enforced here:

- **HTTPS only, TLS verified** against the public roots (system and certifi) plus, when set, the
  CA bundle of ``REFCORE_WEBHOOK_CA_BUNDLE`` (for receivers behind a private CA).
- **3 seconds in total** for everything: resolving the host, connecting, TLS, sending, and the
  response status. Whatever body arrived within the budget is kept (first 1 KiB).
- **Any 2xx is success; anything else is failure**, including every 3xx: redirects are not
  followed (a redirect could lead anywhere, including past the SSRF guard).
- **The connection goes to the address that was checked.** The host is resolved once and checked
  by :mod:`~refcore_http.webhooks.ssrf`; the socket is then opened to those addresses by a network
  backend that never looks the name up again, while the ``Host`` header, TLS SNI and certificate
  verification still use the host name of the URL.
- **One attempt.** No retries at any level (the connection pool is told ``retries=0``).
- **The body is never decompressed.** The request asks for ``Accept-Encoding: identity`` and the
  answer is read raw: a receiver's ``Content-Encoding: gzip, gzip`` of a few kilobytes would
  otherwise inflate to gigabytes in one blocking call on the event loop, which every request of
  the process shares and which no time-out interrupts (probe AJ: 1.8 KB grew the process by
  2 GB and froze every answer for 8 s). A compressed body is recorded as the bytes that came.
- **Recordable outcome.** The text of an :class:`Outcome` (the response body, the error) never
  holds a NUL or an unpaired surrogate, which no database text column keeps: a record refused
  by the database would leave the event claimed, to be sent again after every lease.

The outcome is returned, never raised: the caller records it.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence

import certifi
import httpcore
import httpx
from attrs import field, frozen

from refcore_http.webhooks.host_lookups import HostLookups
from refcore_http.webhooks.ssrf import (
    BlockedDestination,
    IPAddress,
    Resolver,
    checked_addresses,
)

TIMEOUT_SECONDS = 3.0
RESPONSE_BODY_LIMIT = 1024
_ERROR_LIMIT = 500
#: The statuses that send a client elsewhere (304 Not Modified, say, does not).
_REDIRECTS = frozenset({300, 301, 302, 303, 305, 307, 308})
#: Asks the receiver for its body as it is (see the module docstring: never decompressed).
_RAW_BODY = {"Accept-Encoding": "identity"}


#: What no text column of every store keeps: NUL (PostgreSQL refuses it in ``text``) and an
#: unpaired surrogate (not encodable as UTF-8).
_UNRECORDABLE = re.compile("[\x00\ud800-\udfff]")


def recordable(text: str | None) -> str | None:
    """``text`` with each NUL and unpaired surrogate replaced by U+FFFD, as invalid UTF-8 is.

    Everything an :class:`Outcome` holds as text comes, at least in part, from the receiver: the
    body it answered, and error messages that quote what it sent. Recording an attempt must never
    fail on that text: a record refused by the database leaves its event claimed, and after the
    lease the event would be sent again, and again (decisions 7: one attempt, no retry)."""
    if text is None or not _UNRECORDABLE.search(text):
        return text
    return _UNRECORDABLE.sub("\ufffd", text)


@frozen
class Outcome:
    succeeded: bool
    duration_ms: int
    http_status: int | None = None
    #: Why the attempt failed; recordable as it stands (see :func:`recordable`).
    error: str | None = field(default=None, converter=recordable)
    #: The first 1 KiB of the response body, decoded as UTF-8, invalid bytes, NUL and unpaired
    #: surrogates replaced by U+FFFD; ``None`` when no response arrived.
    response_body: str | None = field(default=None, converter=recordable)


def tls_context(ca_bundle: str | None = None) -> ssl.SSLContext:
    """Verification on, against the system roots and certifi's, plus the operator's extra CA."""
    context = ssl.create_default_context()
    context.load_verify_locations(cafile=certifi.where())
    if ca_bundle:
        context.load_verify_locations(cafile=ca_bundle)
    return context


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP connections to already-checked addresses instead of resolving the host name.

    httpcore hands the backend the URL's host; TLS is started afterwards by the connection with
    the URL's host as ``server_hostname``, so SNI and certificate checks are unaffected.
    """

    def __init__(
        self, host: str, addresses: Sequence[IPAddress], inner: httpcore.AsyncNetworkBackend
    ) -> None:
        self._host = host
        self._addresses = tuple(addresses)
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if host != self._host:
            raise httpcore.ConnectError(f"refusing to connect to unchecked host {host}")
        failure: Exception = httpcore.ConnectError("no address to connect to")
        for address in self._addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not webhook destinations")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over one httpcore pool whose network backend is pinned.

    Written against httpcore's public API (rather than swapping the private pool of
    ``httpx.AsyncHTTPTransport``) so that an httpx upgrade cannot silently bring DNS back.
    """

    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = await self._pool.handle_async_request(core_request)
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


def _describe(exc: BaseException) -> str:
    """A short, secret-free account of a transport failure for the delivery record."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed: {cause.verify_message}"
        if isinstance(cause, ssl.SSLError):
            return f"TLS handshake failed: {cause.reason or cause}"
        cause = cause.__cause__ or cause.__context__
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpcore.ConnectError | httpcore.ConnectTimeout | OSError):
        return f"connection failed: {text}"
    if isinstance(exc, httpcore.RemoteProtocolError | httpcore.LocalProtocolError):
        return f"invalid HTTP exchange: {text}"
    if isinstance(exc, httpcore.ReadError | httpcore.WriteError):
        return f"connection lost: {text}"
    return f"{type(exc).__name__}: {text}"


def _clip(text: str, limit: int = _ERROR_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Deliverer:
    """Sends one signed POST per call, under the rules above. Safe to share between tasks."""

    def __init__(
        self,
        *,
        allow_private_networks: bool = False,
        ca_bundle: str | None = None,
        timeout_seconds: float = TIMEOUT_SECONDS,
        resolver: Resolver | None = None,
        network_backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._allow_private = allow_private_networks
        self._tls = tls_context(ca_bundle)
        self._timeout = timeout_seconds
        # Its own lookups, not the event loop's pool: see host_lookups.
        self._resolver = resolver if resolver is not None else HostLookups()
        self._network = network_backend or httpcore.AnyIOBackend()

    async def deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> Outcome:
        started = time.perf_counter()
        progress = _Progress()
        error: str | None = None
        try:
            async with asyncio.timeout(self._timeout):
                await self._post(url, body, headers, progress)
        except TimeoutError:
            if progress.status is None:
                error = f"timed out: no response within {self._timeout:g} s"
        except BlockedDestination as exc:
            error = str(exc)
        except httpx.InvalidURL as exc:
            error = f"invalid URL: {exc}"
        except Exception as exc:
            error = _describe(exc)
        duration_ms = round((time.perf_counter() - started) * 1000)
        status = progress.status
        if status is None:
            return Outcome(succeeded=False, duration_ms=duration_ms, error=_clip(error or "no response"))
        succeeded = 200 <= status < 300
        if not succeeded:
            error = f"HTTP {status}"
            if status in _REDIRECTS:
                error += ": redirects are not followed"
        return Outcome(
            succeeded=succeeded,
            duration_ms=duration_ms,
            http_status=status,
            error=error,
            response_body=bytes(progress.body[:RESPONSE_BODY_LIMIT]).decode("utf-8", errors="replace"),
        )

    async def _post(self, url: str, body: bytes, headers: Mapping[str, str], progress: _Progress) -> None:
        """Resolve, check, connect to the checked addresses, send. Records the status as soon as it
        arrives, then up to 1 KiB of the body (the caller's time budget may cut that short)."""
        target = httpx.URL(url)
        if target.scheme != "https":
            raise BlockedDestination("only https:// URLs are delivered")
        host = target.raw_host.decode("ascii")
        port = target.port or 443
        addresses = await checked_addresses(
            host, port, allow_private_networks=self._allow_private, resolver=self._resolver
        )
        pool = httpcore.AsyncConnectionPool(
            ssl_context=self._tls,
            max_connections=1,
            max_keepalive_connections=0,
            http1=True,
            http2=False,
            retries=0,
            network_backend=PinnedBackend(host, addresses, self._network),
        )
        async with (
            httpx.AsyncClient(
                transport=PinnedTransport(pool),
                follow_redirects=False,
                trust_env=False,
                timeout=httpx.Timeout(self._timeout),
            ) as client,
            client.stream("POST", target, content=body, headers={**headers, **_RAW_BODY}) as response,
        ):
            progress.status = response.status_code
            try:
                async for chunk in response.aiter_raw():
                    progress.body.extend(chunk)
                    if len(progress.body) >= RESPONSE_BODY_LIMIT:
                        break
            except (httpx.HTTPError, httpcore.NetworkError, httpcore.ProtocolError):
                pass  # the status is what counts; a body cut short keeps what arrived


class _Progress:
    """What one attempt has received so far, readable after a time-out interrupts it."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.body = bytearray()
