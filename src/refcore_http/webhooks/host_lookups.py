"""Name lookups for webhook deliveries that one tenant's slow DNS cannot spend for the others.

The system resolver (``getaddrinfo``) blocks a thread until the name servers answer or it gives
up, which for servers that never answer takes as long as the resolver's own timeouts (20 s and
more), whatever the delivery's 3 s budget says: cancelling the wait does not stop the lookup.
Through the event loop's ``getaddrinfo`` every lookup ran on one small pool shared with the whole
process (uvloop: libuv's four threads), so an App whose webhook host had such name servers
filled it, and every other App's deliveries, ``localhost`` included, timed out behind it and were
lost (probe M). Here:

- **One lookup per name at a time.** Deliveries to a host whose lookup is running wait for that
  lookup's answer instead of starting another: a slow host holds one thread, however many of its
  events are queued.
- **Lookups run on threads of their own**, at most :data:`MAX_LOOKUPS` at once, never on a pool
  that anything else uses. Daemon threads: a lookup stuck in the resolver does not hold up the
  process's exit.

What remains: :data:`MAX_LOOKUPS` different slow names at once (a tenant changing its URL
between deliveries, or many tenants) fill the lookups, and further ones wait within their own
delivery's time budget. Each waits on its own name's lookup, never behind an unrelated one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

from refcore_http.webhooks.ssrf import answers_of

#: Lookups running at once in one process. A lookup's thread is idle waiting on the network, so
#: this bounds threads, not CPU.
MAX_LOOKUPS = 16

#: ``getaddrinfo``'s signature, as far as lookups use it (tests pass a stand-in).
AddressInfo = Callable[..., Sequence[tuple[Any, ...]]]


class HostLookups:
    """A :data:`refcore_http.webhooks.ssrf.Resolver`: ``await lookups(host, port)`` answers the
    host's addresses as strings, in resolver order. Bound to the event loop of its first call (one
    dispatcher's)."""

    def __init__(
        self, *, getaddrinfo: AddressInfo = socket.getaddrinfo, max_lookups: int = MAX_LOOKUPS
    ) -> None:
        self._getaddrinfo = getaddrinfo
        self._slots = asyncio.Semaphore(max_lookups)
        self._running: dict[tuple[str, int], asyncio.Future[list[str]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    async def __call__(self, host: str, port: int) -> list[str]:
        key = (host, port)
        running = self._running.get(key)
        if running is None:
            loop = asyncio.get_running_loop()
            running = self._running[key] = loop.create_future()
            task = loop.create_task(self._look_up(key, running))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        # Shielded: a delivery that gives up (its time budget) must not cancel the answer that
        # the other deliveries to the same host wait for.
        return await asyncio.shield(running)

    @property
    def running(self) -> int:
        """Names being looked up now (for tests and diagnostics)."""
        return len(self._running)

    async def _look_up(self, key: tuple[str, int], answer: asyncio.Future[list[str]]) -> None:
        loop = asyncio.get_running_loop()
        try:
            async with self._slots:
                done: asyncio.Future[list[str]] = loop.create_future()
                name = "refcore-host-lookup"
                threading.Thread(target=self._run, args=(key, loop, done), name=name, daemon=True).start()
                answer.set_result(await done)
        except asyncio.CancelledError:
            answer.cancel()
            raise
        except Exception as exc:  # the lookup's own failure, for every delivery waiting on it
            answer.set_exception(exc)
        finally:
            if self._running.get(key) is answer:
                del self._running[key]

    def _run(
        self, key: tuple[str, int], loop: asyncio.AbstractEventLoop, done: asyncio.Future[list[str]]
    ) -> None:
        host, port = key
        try:
            infos = self._getaddrinfo(host, port, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            outcome: tuple[list[str] | None, BaseException | None] = (answers_of(infos), None)
        except Exception as exc:  # handed to the waiters, who expect OSError
            outcome = (None, exc)
        # RuntimeError: the loop closed while the resolver was stuck; no one waits any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, done, *outcome)


def _settle(
    done: asyncio.Future[list[str]], addresses: list[str] | None, error: BaseException | None
) -> None:
    if done.done():
        return
    if error is not None:
        done.set_exception(error)
    else:
        assert addresses is not None
        done.set_result(addresses)
