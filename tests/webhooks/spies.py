"""Test doubles for the network edge: a backend that records connection attempts instead of
connecting, resolvers that record (and script) their answers, and a deliverer whose requests
wait until the test lets them go."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import httpcore
from attrs import define

from refcore_http.webhooks.delivery import Outcome
from refcore_http.webhooks.ssrf import system_resolver


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """Records every TCP connection attempt and refuses it, or passes it on to ``inner``."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.connects: list[tuple[str, int]] = []
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        if self._inner is None:
            raise httpcore.ConnectError("recording backend: no network in this test")
        return await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("not in tests")

    async def sleep(self, seconds: float) -> None:
        return None


class RecordingResolver:
    """The system resolver, with a record of what was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        return await system_resolver(host, port)


class ScriptedResolver:
    """Answers the first lookup with ``first`` and every later one with ``later``: a name whose
    DNS changes between a check and a connection (DNS rebinding)."""

    def __init__(self, first: Sequence[str], later: Sequence[str]) -> None:
        self.first = list(first)
        self.later = list(later)
        self.calls = 0

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls += 1
        return self.first if self.calls == 1 else self.later


@define
class HeldRequest:
    url: str
    headers: dict[str, str]
    body: bytes
    answered: bool = False

    @property
    def event_id(self) -> str:
        return self.headers["X-Service-Webhook-Id"]


class HeldDeliverer:
    """A deliverer (no network) whose requests wait until the test lets them go.

    Every request is recorded in arrival order and held, unless its URL was opened with
    :meth:`open`; :meth:`release` answers the oldest held ones. Answers are ``204`` successes.
    Its futures belong to the loop that first awaits them: use one instance per ``asyncio.run``.
    """

    def __init__(self) -> None:
        self.requests: list[HeldRequest] = []
        self._held: list[tuple[HeldRequest, asyncio.Future[None]]] = []
        self._open: set[str] = set()
        self._open_all = False
        #: Requests unanswered at once, most ever, by URL.
        self.most_in_flight: Counter[str] = Counter()

    def open(self, url: str | None = None) -> None:
        """Answer the URL's requests (every URL's when ``None``) at once from now on, and the
        ones held now."""
        if url is None:
            self._open_all = True
        else:
            self._open.add(url)
        for request, future in list(self._held):
            if url is None or request.url == url:
                self._answer(request, future)

    def release(self, count: int = 1, url: str | None = None) -> None:
        """Answer the ``count`` oldest held requests (of ``url`` when given)."""
        for request, future in [(r, f) for r, f in self._held if url is None or r.url == url][:count]:
            self._answer(request, future)

    def _answer(self, request: HeldRequest, future: asyncio.Future[None]) -> None:
        self._held = [(r, f) for r, f in self._held if f is not future]
        if not future.done():
            future.set_result(None)

    def sent(self, url: str | None = None) -> list[HeldRequest]:
        return [r for r in self.requests if url is None or r.url == url]

    def unanswered(self, url: str | None = None) -> int:
        return sum(1 for r in self.sent(url) if not r.answered)

    async def deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> Outcome:
        request = HeldRequest(url=url, headers=dict(headers), body=body)
        self.requests.append(request)
        self.most_in_flight[url] = max(self.most_in_flight[url], self.unanswered(url))
        if not self._open_all and url not in self._open:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._held.append((request, future))
            await future
        request.answered = True
        return Outcome(succeeded=True, duration_ms=0, http_status=204)


async def until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``condition`` came true within ``seconds`` (generous: a bound, never a measure),
    looking every 5 ms."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.005)
    return condition()
