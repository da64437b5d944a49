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

from refcore_http.endpoints import Visitor
from refcore_http.request_headers import header
from refcore_http.settings import Network

MAX_USER_AGENT = 1024


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address: str, proxies: Sequence[Network]) -> bool:
    parsed = _address(address)
    return parsed is not None and any(parsed in network for network in proxies)


def client_ip(peer: str | None, forwarded_for: str | None, proxies: Sequence[Network]) -> str | None:
    if peer is None or not proxies or not _trusted(peer, proxies) or not forwarded_for:
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if _address(hop) is None:
            return peer  # a malformed chain: believe only the peer we can see
        if not _trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer


def visitor_of(request: Request, proxies: Sequence[Network]) -> Visitor:
    client = request.scope.get("client")  # (host, port), as ``Request.client`` reads it
    peer: str | None = client[0] if client else None
    agent = header(request, b"user-agent")
    # Without a trusted proxy the header is never believed, so it is not even looked up.
    forwarded_for = header(request, b"x-forwarded-for") if proxies else None
    return Visitor(
        ip=client_ip(peer, forwarded_for, proxies),
        user_agent=agent[:MAX_USER_AGENT] if agent else None,
    )
