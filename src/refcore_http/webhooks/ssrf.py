"""The SSRF guard of decisions 7: where a webhook may be delivered.

A webhook URL is chosen by a tenant, and the server sends requests to it from inside the
operator's network. Without a guard, ``https://169.254.169.254/`` (cloud metadata),
``https://localhost:5432/`` or ``https://10.0.0.5/`` would turn the server into a proxy into that
network. So every delivery resolves the host first and refuses private, loopback, link-local,
multicast, reserved and unspecified addresses, in IPv4, IPv6 and IPv4-embedded forms, and the
connection is then made to the very addresses that were checked (see
:mod:`refcore_http.webhooks.delivery`): a second DNS lookup could answer differently
(DNS rebinding).

Host names are checked after resolution, never by their spelling, but numeric spellings matter
too: ``2130706433``, ``0x7f000001`` and ``017700000001`` are all ``127.0.0.1`` to the C resolver,
so they are parsed the same way here and checked as the address they denote.

If *any* address a name resolves to is blocked, the name is blocked: a name that mixes public
and private answers is not a webhook receiver anyone needs.

``WEBHOOK_ALLOW_PRIVATE_NETWORKS=true`` (self-hosted deployments talking to their own network)
turns the whole guard off; resolution and pinning still happen.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Any
from urllib.parse import unquote

from refcore.rules.webhook_url import legacy_ipv4

IPAddress = IPv4Address | IPv6Address

#: ``(host, port) -> addresses as strings``; the default asks the system resolver.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]


class BlockedDestination(Exception):
    """The host resolves to an address deliveries may not reach (or does not resolve at all)."""


_BLOCKED_V4: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), reason)
    for net, reason in (
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved (IETF protocol assignments)"),
        ("192.0.2.0/24", "reserved (documentation)"),
        ("192.88.99.0/24", "reserved (6to4 relay)"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "reserved (benchmarking)"),
        ("198.51.100.0/24", "reserved (documentation)"),
        ("203.0.113.0/24", "reserved (documentation)"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)

_BLOCKED_V6: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), reason)
    for net, reason in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "reserved (IPv4-compatible)"),
        ("64:ff9b:1::/48", "reserved (local-use NAT64)"),
        # SIIT's IPv4-translated addresses (RFC 2765): a translator maps them to the IPv4 address
        # in their last 32 bits, private or not, and no public receiver is published at one.
        ("::ffff:0:0:0/96", "reserved (IPv4-translated)"),
        ("100::/64", "reserved (discard)"),
        ("2001::/23", "reserved (IETF protocol assignments, Teredo)"),
        ("2001:db8::/32", "reserved (documentation)"),
        ("fc00::/7", "unique local (private)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)

_NAT64 = IPv6Network("64:ff9b::/96")


def parse_numeric_host(host: str) -> IPAddress | None:
    """The address a host literally names, or ``None`` for a host name.

    Accepts canonical IPv4 and IPv6 (with or without URL brackets and zone) and the legacy IPv4
    forms of ``inet_aton``: one to four parts, each decimal, octal (leading ``0``) or hex
    (``0x``), the last part filling the remaining bytes (``127.1``, ``2130706433``).
    """
    text = unquote(host.strip())
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ip_address(text)
    except ValueError:
        pass
    return legacy_ipv4(text)  # one reading of the numeric spellings, the URL rule's


def unmapped(address: IPAddress) -> IPAddress:
    """``::ffff:a.b.c.d`` is the IPv4 address ``a.b.c.d`` to the kernel; check (and connect to) that."""
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def blocked_reason(address: IPAddress) -> str | None:
    """Why deliveries may not reach this address, or ``None`` when it is a public unicast address."""
    address = unmapped(address)
    if isinstance(address, IPv4Address):
        for net4, reason in _BLOCKED_V4:
            if address in net4:
                return reason
        if address == IPv4Address("255.255.255.255"):
            return "broadcast"
    else:
        if address.scope_id:
            return "link-local (scoped)"
        for net, reason in _BLOCKED_V6:
            if address in net:
                return reason
        embedded: IPv4Address | None = None
        if address.sixtofour is not None:
            embedded = address.sixtofour
        elif address in _NAT64:
            embedded = IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            inner = blocked_reason(embedded)
            if inner is not None:
                return f"{inner} (embedded in IPv6)"
    # Belt and braces: anything the standard library does not consider globally reachable.
    if address.is_multicast:
        return "multicast"
    if not address.is_global:
        return "not globally routable"
    return None


def answers_of(infos: Sequence[tuple[Any, ...]]) -> list[str]:
    """The addresses of ``getaddrinfo``'s answer, as strings, each once, in resolver order."""
    answers: list[str] = []
    for *_, sockaddr in infos:
        text = str(sockaddr[0])
        if text not in answers:
            answers.append(text)
    return answers


async def system_resolver(host: str, port: int) -> list[str]:
    """The event loop's own lookup. Deliveries use
    :class:`~refcore_http.webhooks.host_lookups.HostLookups` instead."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return answers_of(infos)


async def checked_addresses(
    host: str, port: int, *, allow_private_networks: bool, resolver: Resolver = system_resolver
) -> list[IPAddress]:
    """The addresses a delivery to ``host`` may connect to, in resolver order.

    Raises :class:`BlockedDestination` before any connection is attempted when the host does not
    resolve, or when one of its addresses is blocked and private networks are not allowed.
    """
    literal = parse_numeric_host(host)
    if literal is not None:
        candidates: list[IPAddress] = [literal]
    else:
        try:
            answers = await resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise BlockedDestination(f"the host {host} does not resolve ({exc})") from None
        candidates = []
        for answer in answers:
            try:
                candidates.append(ip_address(answer))
            except ValueError:
                raise BlockedDestination(f"the host {host} resolved to an invalid address") from None
        if not candidates:
            raise BlockedDestination(f"the host {host} does not resolve")
    addresses: list[IPAddress] = []
    for candidate in candidates:
        address = unmapped(candidate)
        if not allow_private_networks:
            reason = blocked_reason(address)
            if reason is not None:
                shown = "" if literal is not None and host == str(address) else f"{host} resolves to "
                raise BlockedDestination(
                    f"destination blocked: {shown}{address}, which is {reason} "
                    "(private and local networks are refused unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=true)"
                )
        if address not in addresses:
            addresses.append(address)
    return addresses
