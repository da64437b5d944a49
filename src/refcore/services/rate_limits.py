"""Fixed-window rate limits kept in the store, so that they hold across every server process.

A limit is a key (``join:email:<digest>``) and a number of uses per window. Each use takes the
window's :class:`~refcore.models.signup.RateLimitCounter` row ``for_update`` and counts up inside
the caller's unit of work, so:

- the count and the action it limits commit together, or not at all (a refused or failed request
  uses nothing);
- two processes racing for the last use are serialised by the row lock (PostgreSQL) or the write
  lock (SQLite); two racing for the *first* use of a window clash on the unique
  (``key``, ``window_start``) and the loser's unit of work runs again and sees the winner's row.

Windows are aligned to the epoch (every hour on the hour for a one-hour window), so every process
agrees on which window a moment falls in without sharing anything but the store.

A window is at most :data:`LONGEST_WINDOW` long, so a counter whose window began before
:func:`forgettable_before` is never read again and a store may delete it (the SQL store does, in
each server's periodic pruning): the counters do not grow with every signup ever made.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from datetime import UTC, datetime, timedelta

from attrs import evolve

from refcore.errors import RateLimited
from refcore.models.signup import RateLimitCounter
from refcore.representation import timestamp
from refcore.services.runtime import Tx
from refcore.validation import unmapped_ip

#: The longest window a limit may have (hosted signups use one hour).
LONGEST_WINDOW = timedelta(days=1)
#: Kept beyond the longest window, for server clocks that disagree by less than this.
_CLOCK_MARGIN = timedelta(hours=1)


def forgettable_before(now: datetime) -> datetime:
    """Counters of windows that began before this moment have ended, whatever their length."""
    return now - LONGEST_WINDOW - _CLOCK_MARGIN


def limit_key(scope: str, value: str) -> str:
    """A counter key that does not store ``value`` (an address, an IP) in clear. An unpaired
    surrogate (which no address holds) is digested as it is, as :func:`refcore.credentials.digest`
    does, instead of a raw ``UnicodeEncodeError`` (probe AD)."""
    return f"{scope}:{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()}"


#: How much of an IPv6 address one client is counted by: a /64, the least a network assigns one
#: site or device (RFC 6177), from which it may send from any of 2**64 addresses.
IPV6_CLIENT_PREFIX = 64


def client_of(ip: str) -> str:
    """The part of a client's address that per-IP limits count: an IPv4 address (an IPv4-mapped
    one unmapped) or an IPv6 address's /64, written one way. Counted by the address as written,
    ``2001:db8::1`` and ``2001:DB8::1`` had been two clients, and one IPv6 client as many as it
    had addresses (probe M). Text that is no address is counted as it is."""
    try:
        address = unmapped_ip(ipaddress.ip_address(ip))
    except ValueError:
        return ip
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


def window_start(moment: datetime, window: timedelta) -> datetime:
    """The start of the epoch-aligned window of length ``window`` that ``moment`` falls in, so that every
    process agrees on the window without sharing anything but the store. A window under a second or over
    :data:`LONGEST_WINDOW` is a programming error, ``ValueError``."""
    size = int(window.total_seconds())
    if size <= 0:
        raise ValueError("a rate-limit window must be at least one second")
    if window > LONGEST_WINDOW:
        raise ValueError("a rate-limit window must be at most a day: its counters are pruned after that")
    seconds = int(moment.timestamp())
    return datetime.fromtimestamp(seconds - seconds % size, UTC)


def take(tx: Tx, key: str, *, limit: int, window: timedelta) -> None:
    """Use one of ``limit`` uses of ``key`` in the current window, or raise ``429 rate_limited``."""
    start = window_start(tx.now, window)
    counters = tx.uow.rate_limit_counters
    counter = counters.find_one({"key": key, "window_start": start}, for_update=True)
    if counter is None:
        if limit < 1:
            raise _refused(tx.now, start, window)
        counters.add(
            RateLimitCounter(id=tx.new_id("rlc"), key=key, window_start=start, count=1, created_at=tx.now)
        )
        return
    if counter.count >= limit:
        raise _refused(tx.now, start, window)
    counters.replace(evolve(counter, count=counter.count + 1))


def _refused(now: datetime, start: datetime, window: timedelta) -> RateLimited:
    """The window's end in the message, and the whole seconds until it (at least 1) for
    ``Retry-After``."""
    end = start + window
    wait = max(1, math.ceil((end - now).total_seconds()))
    return RateLimited(f"Too many requests; try again after {timestamp(end)}", retry_after_seconds=wait)
