"""Decisions 7 and docs/webhooks.md: an App whose receiver is slow never holds up another App's
events, its name servers included (probe M: one App's unanswered DNS made every other App's
deliveries time out, and they were lost). ``HostLookups`` with a stand-in ``getaddrinfo``."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest

from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.host_lookups import HostLookups


class Resolver:
    """``getaddrinfo`` that answers ``ok.test`` at once and blocks on ``slow*.test`` until released,
    counting lookups started and the most running at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started: list[str] = []
        self.running = 0
        self.most_running = 0
        self._lock = threading.Lock()

    def __call__(self, host: str, port: int, *_: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            self.started.append(host)
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            if host.startswith("slow"):
                self.release.wait(10)
            if host == "missing.test":
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.10", port))]
        finally:
            with self._lock:
                self.running -= 1


async def _gives_up(lookups: HostLookups, host: str, seconds: float = 0.05) -> bool:
    try:
        await asyncio.wait_for(lookups(host, 443), seconds)
    except TimeoutError:
        return True
    return False


def test_a_slow_host_holds_one_lookup_however_many_deliveries_wait_for_it() -> None:
    resolver = Resolver()
    lookups = HostLookups(getaddrinfo=resolver, max_lookups=4)

    async def scenario() -> float:
        gave_up = await asyncio.gather(*(_gives_up(lookups, "slow.test") for _ in range(30)))
        assert all(gave_up)
        assert resolver.started == ["slow.test"] and lookups.running == 1
        started = time.perf_counter()
        assert await asyncio.wait_for(lookups("ok.test", 443), 2) == ["192.0.2.10"]
        return time.perf_counter() - started

    try:
        took = asyncio.run(scenario())
    finally:
        resolver.release.set()
    assert took < 1.0  # answered beside the stuck lookup, not behind it


def test_a_lookup_answers_every_delivery_waiting_for_it_and_the_next_one_starts_afresh() -> None:
    resolver = Resolver()
    lookups = HostLookups(getaddrinfo=resolver)

    async def scenario() -> None:
        waiting = [asyncio.ensure_future(lookups("slow.test", 443)) for _ in range(5)]
        await asyncio.sleep(0.05)
        resolver.release.set()
        answers = await asyncio.wait_for(asyncio.gather(*waiting), 2)
        assert answers == [["192.0.2.10"]] * 5
        assert lookups.running == 0
        await lookups("slow.test", 443)  # released: a new lookup, not a remembered answer
        for _ in range(2):
            with pytest.raises(OSError):
                await lookups("missing.test", 443)

    asyncio.run(scenario())
    assert resolver.started == ["slow.test", "slow.test", "missing.test", "missing.test"]


def test_lookups_never_run_more_threads_than_their_limit() -> None:
    resolver = Resolver()
    lookups = HostLookups(getaddrinfo=resolver, max_lookups=3)

    async def scenario() -> None:
        hosts = [f"slow{n}.test" for n in range(8)]
        assert all(await asyncio.gather(*(_gives_up(lookups, host, 0.2) for host in hosts)))
        assert resolver.most_running == 3
        resolver.release.set()
        await asyncio.sleep(0.2)
        assert lookups.running == 0 and len(resolver.started) == 8 and resolver.most_running == 3

    try:
        asyncio.run(scenario())
    finally:
        resolver.release.set()


def test_a_deliverer_looks_names_up_on_its_own_threads_not_the_event_loops() -> None:
    """The loop's ``getaddrinfo`` (uvloop: libuv's four shared threads) is never used."""

    resolver = Resolver()
    deliverer = Deliverer(timeout_seconds=0.2, resolver=HostLookups(getaddrinfo=resolver))

    async def scenario() -> None:
        loop = asyncio.get_running_loop()

        async def refused(*_: Any, **__: Any) -> Any:
            raise AssertionError("the event loop's getaddrinfo was used")

        loop.getaddrinfo = refused  # type: ignore[method-assign]
        for _ in range(10):
            outcome = await deliverer.deliver("https://slow.test/in", b"{}", {})
            assert not outcome.succeeded and "timed out" in (outcome.error or "")

    try:
        asyncio.run(scenario())
    finally:
        resolver.release.set()
    assert resolver.started == ["slow.test"]
    assert isinstance(Deliverer()._resolver, HostLookups)  # the server's default
