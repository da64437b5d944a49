"""What an App may configure as its webhook endpoint URL (interface 4.6, decisions 7).

Checked here, when the endpoint is configured: HTTPS, a host, no credentials, and a host that a
delivery can reach at all. A URL accepted here and then refused by every attempt would fail each
event in silence, so the host is held to what the delivering side (httpx, the system resolver,
the SSRF guard) can use, and to what DNS can hold:

- an IP literal: IPv6 in brackets; IPv4 as four decimal numbers without leading zeros (httpx
  refuses ``0177.0.0.1`` and ``127.000.000.001``). Any other host whose last label is a number,
  decimal or ``0x`` hexadecimal, is refused. No public name ends in a number (the WHATWG URL
  Standard reads such a host as an address, or refuses it: ``1.2.3.4.5``, ``a.1``, ``1.2.3.4.``),
  and the older numeric spellings of an address (``2130706433``, ``0x7f000001``, ``127.1``) are
  not deliverable either: the SSRF guard reads them as the address they denote and connects to
  it, but httpx verifies the certificate against the host as spelled, which no certificate
  names, so every attempt failed TLS verification;
- a name: labels of 1 to 63 characters (an empty label, ``a..b``, or a longer one is refused by
  the resolver's IDNA codec before any lookup), 253 characters in all (RFC 1035), and none of
  the characters the WHATWG URL Standard forbids in a domain (``%``, ``<``, ``>``, ``[``, ``]``,
  ``\\``, ``^``, ``|``): httpx would send a percent sign as it stands, so
  ``evil.com%40localhost`` is looked up as such a name, never as ``evil.com@localhost``;
- a name with characters beyond ASCII must be a valid IDNA 2008 name (RFC 5891 to 5893) after
  lower-casing, checked by the ``idna`` package that httpx encodes it with; ``ⓛⓞⓒⓐⓛⓗⓞⓢⓣ`` is
  not one;
- an ASCII label starting ``xn--`` must be a real A-label: Punycode that decodes and encodes
  back the same. When the host starts with one, httpx decodes the whole host with IDNA 2008 as
  it builds each request, so every label must be valid there (``xn--ls8h.la``, an IDNA 2003
  registration, never goes out, nor ``xn--bcher-kva.a_b.example``); an ``xn--`` label further
  right is sent as it stands, so IDNA 2003 validity is enough for it (``www.xn--ls8h.la``).
  ``xn--`` alone is no A-label.

Whether the host is a private or local address can only be known after DNS resolution, at the
moment of delivery, so that check belongs to the delivering adapter (a name that resolves to a
public address today may resolve to a private one tomorrow).
"""

from __future__ import annotations

import re
from ipaddress import AddressValueError, IPv4Address, IPv6Address, ip_address
from urllib.parse import unquote, urlsplit

import idna

from refcore.errors import ValidationError

MAX_URL_LENGTH = 2048
#: RFC 1035: 63 octets a label, 255 a name on the wire, which is 253 characters written out
#: without the trailing dot.
MAX_LABEL_LENGTH = 63
MAX_HOST_LENGTH = 253


def require_webhook_url(value: object) -> str:
    """The URL, if it is an absolute ``https://`` URL with a deliverable host and no user information.

    ``http://`` is refused outright: the payload is signed, not encrypted, and carries customer and
    affiliate data. Credentials in the URL are refused because the URL is shown in the endpoint
    and in every delivery record, where a password would sit in plain text.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("url must be a non-empty string", param="url")
    if len(value) > MAX_URL_LENGTH:
        raise ValidationError(f"url must be at most {MAX_URL_LENGTH} characters", param="url")
    if value != value.strip() or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise ValidationError("url must not contain spaces or control characters", param="url")
    if not _is_unicode_text(value):
        raise ValidationError("url must be valid Unicode text", param="url")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValidationError("url is not a valid URL", param="url") from None
    if parts.scheme.lower() != "https":
        raise ValidationError("url must be an https:// URL", param="url")
    if not parts.hostname:
        raise ValidationError("url must name a host", param="url")
    if parts.username is not None or parts.password is not None:
        raise ValidationError("url must not contain a user name or password", param="url")
    if port == 0:
        raise ValidationError("url has an invalid port", param="url")
    require_deliverable_host(_written_host(parts.netloc))
    return value


def _is_unicode_text(value: str) -> bool:
    """No unpaired surrogate: httpx could not encode the URL, and no database keeps one."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _written_host(netloc: str) -> str:
    """The host as the URL spells it (``urlsplit`` lower-cases and unbrackets ``hostname``)."""
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        return hostport[: hostport.find("]") + 1]
    return hostport.partition(":")[0]


def _refuse(message: str) -> ValidationError:
    return ValidationError(f"url {message}", param="url")


# -- the host ------------------------------------------------------------------------------------

#: What httpx takes for an IPv4 address and checks as one (``httpx._urlparse``).
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
#: The characters an ASCII host may hold: httpx percent-encodes every other one, and the WHATWG
#: URL Standard forbids ``%``, ``\\`` and ``|`` in a domain besides.
_ASCII_HOST_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=\"`{}]*")
_ACE_PREFIX = "xn--"


def require_deliverable_host(host: str) -> None:
    """Raise :class:`ValidationError` (``param: url``) unless a delivery could reach ``host``,
    the host as the URL spells it (IPv6 in brackets)."""
    if host.startswith("["):
        _require_ipv6_literal(host[1:-1])
        return
    if host.isascii():
        name = host.lower()
        if not _ASCII_HOST_CHARACTERS.fullmatch(name):
            found = next(ch for ch in name if not _ASCII_HOST_CHARACTERS.fullmatch(ch))
            hint = " (percent-encoding is not allowed in the host: write the host itself)"
            raise _refuse(f"host must not contain {found!r}{hint if found == '%' else ''}")
        if _IPV4_STYLE.fullmatch(name):
            try:
                IPv4Address(name)
            except AddressValueError:
                raise _refuse(
                    "host is not a valid IPv4 address: write four numbers from 0 to 255, "
                    "without leading zeros"
                ) from None
            return
        _require_name_lengths(name.split("."))
        if name.startswith(_ACE_PREFIX):
            # httpx decodes such a host to Unicode when it builds the request (``URL.host``, for
            # the Host header) with IDNA 2008, every label of it: one that is not valid there
            # fails every attempt.
            for label in _without_trailing_dot(name.split(".")):
                _idna2008_ascii_label(label)
        else:
            for label in name.split("."):
                if label.startswith(_ACE_PREFIX):
                    _require_ascii_a_label(label)
    else:
        name = _idna2008_encode(host.lower())
    _require_number_is_an_address(name)


def _require_ipv6_literal(inner: str) -> None:
    try:
        IPv6Address(inner)  # what httpx checks
        ip_address(unquote(inner))  # what the SSRF guard connects to (a zone as %25 decoded)
    except ValueError:
        raise _refuse("host is not a valid IPv6 address") from None


def _without_trailing_dot(labels: list[str]) -> list[str]:
    return labels[:-1] if len(labels) > 1 and labels[-1] == "" else labels


def _require_name_lengths(labels: list[str]) -> None:
    """Non-empty labels of at most 63 characters, one trailing dot allowed, 253 characters in all."""
    labels = _without_trailing_dot(labels)
    if any(label == "" for label in labels):
        raise _refuse("host has an empty label (two dots in a row, or a dot at the start)")
    if any(len(label) > MAX_LABEL_LENGTH for label in labels):
        raise _refuse(f"host has a label longer than {MAX_LABEL_LENGTH} characters")
    if len(".".join(labels)) > MAX_HOST_LENGTH:
        raise _refuse(f"host is longer than {MAX_HOST_LENGTH} characters")


def _require_ascii_a_label(label: str) -> None:
    """An ``xn--`` label of an ASCII host, after its first label: valid under IDNA 2008 or, for
    names registered before it, IDNA 2003 (the standard library's codec checks that it decodes
    and encodes back the same). httpx sends such a label as it stands."""
    try:
        label.encode("ascii").decode("idna")
    except UnicodeError:
        pass
    else:
        return
    try:
        _idna2008_ascii_label(label)
    except ValidationError:
        raise _refuse(f"host has an invalid IDNA label (A-label): {label}") from None


def _ends_in_a_number(name: str) -> bool:
    """The WHATWG URL Standard's test: the last label (before a trailing dot) is a number,
    decimal or ``0x`` hexadecimal."""
    labels = name.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()
    last = labels[-1]
    if last.isascii() and last.isdigit():
        return True
    return last[:2] == "0x" and all(ch in "0123456789abcdef" for ch in last[2:])


def _require_number_is_an_address(name: str) -> None:
    """A host ending in a number must be a dotted-quad IPv4 address, which returned before this.

    A numeric spelling that ``inet_aton`` reads (:func:`legacy_ipv4`) names an address too, but
    TLS fails on it: httpx checks the certificate against the host as written (``127.1``),
    which no certificate names."""
    if _ends_in_a_number(name):
        kind = (
            "a numeric spelling of an IPv4 address"
            if legacy_ipv4(name) is not None
            else "not an IPv4 address"
        )
        raise _refuse(
            f"host ends in a number but is {kind}: write an IPv4 address as four decimal "
            "numbers from 0 to 255 (127.0.0.1, not 2130706433, 0x7f000001 or 127.1), or a name"
        )


_LEGACY_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


def legacy_ipv4(host: str) -> IPv4Address | None:
    """The IPv4 address of a numeric host in any spelling ``inet_aton`` reads (and the delivery's
    SSRF guard, ``refcore_http.webhooks.ssrf.parse_numeric_host``, with it): one to four parts,
    each decimal, octal (leading ``0``) or hexadecimal (``0x``), the last filling the remaining
    bytes. ``None`` for anything else.

    The URL rule now refuses these spellings; the SSRF guard still reads them, so that an
    endpoint URL stored before is still checked as the address it denotes."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_LEGACY_PART.fullmatch(part) for part in parts):
        return None
    values = [_legacy_value(part) for part in parts]
    *leading, last = values
    if any(value > 255 for value in leading) or last >= 256 ** (4 - len(leading)):
        return None
    address = last
    for index, value in enumerate(leading):
        address |= value << (8 * (3 - index))
    return IPv4Address(address)


def _legacy_value(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if part.startswith("0"):
        return int(part, 8)
    return int(part)


# -- IDNA 2008 (RFC 5891, 5892, 5893), by the ``idna`` package that httpx encodes hosts with ----


def _idna2008_encode(host: str) -> str:
    """``host`` (lower-cased, not ASCII) in A-labels, as httpx encodes it (``idna.encode``), or
    refused as every delivery to it would be (``Invalid IDNA hostname``)."""
    try:
        encoded = idna.encode(host).decode("ascii")
    except (idna.IDNAError, UnicodeError) as refused:
        raise _refuse(f"host is not a valid internationalized domain name (IDNA 2008): {refused}") from None
    if len(encoded.rstrip(".")) > MAX_HOST_LENGTH:
        raise _refuse(f"host is longer than {MAX_HOST_LENGTH} characters once IDNA-encoded")
    return encoded


def _idna2008_ascii_label(label: str) -> str:
    """An ASCII label that httpx decodes with IDNA 2008 (``idna.decode``) when the host starts
    with ``xn--``: one that does not decode fails every request."""
    try:
        idna.decode(label)
    except (idna.IDNAError, UnicodeError):
        raise _refuse(f"host has an invalid IDNA label (A-label): {label}") from None
    return label
