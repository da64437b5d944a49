"""Who is on the other end of a public capture: IP address and user agent of the visitor.

The address is the TCP peer's, unless the peer is a configured trusted proxy: then
``X-Forwarded-For`` is read from the right, skipping trusted proxies, and the first address that
is not one is the visitor. Anyone else can write that header, so it is never believed from an
untrusted peer (decisions 3).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from starlette.requests import Request

from refcore.validation import IPAddress, unmapped_ip
from refcore_http.endpoints import Visitor
from refcore_http.request_headers import combined, header
from refcore_http.settings import Network

MAX_USER_AGENT = 1024


#: How a dual-stack socket writes an IPv4 client's address (an ASGI server on ``::`` without
#: ``IPV6_V6ONLY``; ``refcore serve --host ::``, on asyncio, listens on IPv6 alone).
_MAPPED_PREFIX = "::ffff:"


def _address(text: str) -> IPAddress | None:
    try:
        return unmapped_ip(ipaddress.ip_address(text.strip()))
    except ValueError:
        return None


def _trusted(address: IPAddress, proxies: Sequence[Network]) -> bool:
    return any(address in network for network in proxies)


def _peer(peer: str) -> str:
    """The TCP peer as refcore writes it: a mapped IPv4 address as IPv4."""
    if not peer.startswith(_MAPPED_PREFIX):
        return peer
    address = _address(peer)
    return peer if address is None else str(address)


def client_ip(peer: str | None, forwarded_for: str | None, proxies: Sequence[Network]) -> str | None:
    if peer is None:
        return None
    if not proxies or not forwarded_for:
        # Every public capture comes here: only the mapped form is parsed (uvicorn writes the
        # others as ``ipaddress`` would), and an IPv4 peer is not even looked at twice.
        return _peer(peer) if ":" in peer else peer
    seen = _address(peer)
    if seen is None or not _trusted(seen, proxies):
        return _peer(peer)
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return _peer(peer)  # a malformed chain: believe only the peer we can see
        if not _trusted(address, proxies):
            return str(address)
    # Every hop is a trusted proxy: the leftmost is the nearest thing to the visitor.
    first = _address(hops[0]) if hops else None
    return _peer(peer) if first is None else str(first)


def visitor_of(request: Request, proxies: Sequence[Network]) -> Visitor:
    client = request.scope.get("client")  # (host, port), as ``Request.client`` reads it
    peer: str | None = client[0] if client else None
    agent = header(request, b"user-agent")
    # Without a trusted proxy the header is never believed, so it is not even looked up.
    forwarded_for = combined(request, b"x-forwarded-for") if proxies else None
    return Visitor(
        ip=client_ip(peer, forwarded_for, proxies),
        user_agent=agent[:MAX_USER_AGENT] if agent else None,
    )
