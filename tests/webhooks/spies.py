"""Test doubles for the network edge: a backend that records connection attempts instead of
connecting, and resolvers that record (and script) their answers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import httpcore

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
