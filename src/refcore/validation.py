"""Checks of caller-supplied values, shared by every service.

The core validates its own inputs (it is a library as well as a server), so a Python caller and
an HTTP caller get the same ``validation_error`` with the same ``param``.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from typing import TypeVar

import idna

from refcore.credentials import shown
from refcore.errors import ValidationError

E = TypeVar("E")

MAX_TEXT = 255
#: A run of characters an address may hold between dots: no white space, control character, or
#: character that means something in a mail header (RFC 5322's specials ``()<>[]:;@\,"``). An
#: address is dot-separated runs, an ``@``, and a domain of at least two. Non-ASCII letters stay
#: allowed (RFC 6531). The specials had passed: ``ally,boss@x.example`` was stored as one address
#: and read by the mailer's ``To`` header as two recipients, ``<a>@x.example`` as ``a``.
_EMAIL_RUN = r"[^\s\x00-\x1f\x7f()<>\[\]:;@\\,\".]+"
_EMAIL = re.compile(rf"{_EMAIL_RUN}(?:\.{_EMAIL_RUN})*@{_EMAIL_RUN}(?:\.{_EMAIL_RUN})+")
_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
LINK_CODE = re.compile(r"^[a-z0-9_-]{3,64}$")
#: What one line of text may not hold: a control character (Unicode category Cc, U+0000 to U+001F
#: and U+007F to U+009F: CR, LF, TAB, ESC, NEL…) or a line or paragraph separator (U+2028,
#: U+2029). Each breaks or hides the line where the text is shown again: a person's name put
#: into an e-mail could start a paragraph of its own, into a CSV row a row of its own. Nor the
#: invisible characters that make a name read as another (probe K): the direction embeddings,
#: overrides and isolates (U+202A to U+202E, U+2066 to U+2069), the zero-width space (U+200B)
#: and the byte-order mark (U+FEFF). The zero-width joiner and non-joiner (U+200C, U+200D) stay:
#: scripts and emoji need them.
_NOT_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b\u202a-\u202e\u2066-\u2069\ufeff]")


def require_text(value: object, *, param: str, max_length: int = MAX_TEXT) -> str:
    """``value`` as a plain ``str``: non-blank, at most ``max_length`` characters, storable.

    A ``str`` subclass is read as the text it holds, never through its own methods: one whose
    ``__eq__`` always held had matched another record in the memory store and been written
    there, where the SQL stores bind the text alone (probe AD)."""
    if not isinstance(value, str):
        raise ValidationError(f"{param} must be a non-empty string", param=param)
    text = exact_str(value)
    if not text.strip():
        raise ValidationError(f"{param} must be a non-empty string", param=param)
    if len(text) > max_length:
        raise ValidationError(f"{param} must be at most {max_length} characters", param=param)
    if "\x00" in text or not text.isascii():
        require_storable(text, param=param)
    return text


def exact_str(value: str) -> str:
    """``value`` itself if it is a ``str``, else the plain ``str`` its subclass holds."""
    return value if type(value) is str else str.__str__(value)


def require_storable(text: str, *, param: str) -> None:
    """``validation_error`` naming ``param`` if ``text`` holds what no store can keep: the NUL
    character, which PostgreSQL's ``text`` cannot hold (SQLite and the memory store had kept
    it), or an unpaired UTF-16 surrogate, which no UTF-8 encoder writes (SQLite's driver had
    raised a bare ``UnicodeEncodeError``). The HTTP layer refuses both where it reads a body;
    this is the same refusal for a library caller."""
    # ``param`` may be a body member's name, the caller's text (a pasted secret included): it is
    # quoted through shown(), on the refusals only, since valid non-ASCII text passes here too.
    if "\x00" in text:
        named = shown(param)
        raise ValidationError(f"{named} must not contain the NUL character (U+0000)", param=named)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        named = shown(param)
        raise ValidationError(
            f"{named} holds an unpaired UTF-16 surrogate, which is not text", param=named
        ) from None


def optional_text(value: object, *, param: str, max_length: int = MAX_TEXT) -> str | None:
    if value is None:
        return None
    return require_text(value, param=param, max_length=max_length)


def require_line(value: object, *, param: str, max_length: int = MAX_TEXT) -> str:
    """:func:`require_text` that is one line: no control character or line separator.

    For every name refcore keeps (a person's, an affiliate's, an organization's, App's, program's
    or link's), which refcore and the Developer show to others as one line (the dashboard, payout
    exports, the join page, mail): probe J sent a join request whose ``name`` was a whole phishing
    message, lines and all, and the confirmation mail began with it."""
    text = require_text(value, param=param, max_length=max_length)
    if _NOT_ONE_LINE.search(text) is not None or (not text.isascii() and _holds_invisible_format(text)):
        raise ValidationError(f"{param} must be one line of text, without control characters", param=param)
    if not text.isascii() and (_BLANK_LETTERS.search(text) is not None or _is_mark(text[0])):
        raise ValidationError(
            f"{param} must not hold blank letters or start with a combining mark", param=param
        )
    return text


#: Letters and symbols that show as nothing, outside the format characters: the Hangul fillers
#: (U+115F, U+1160, U+3164, U+FFA0) and the blank Braille pattern (U+2800). With a combining mark
#: at a name's start (which has no letter to sit on) they made names that render blank or as
#: another (probe Q: ``a\u3164b`` reads ``ab``).
_BLANK_LETTERS = re.compile("[\u115f\u1160\u3164\uffa0\u2800]")


def _is_mark(character: str) -> bool:
    """Whether ``character`` is a combining mark (Unicode Mn, Mc, Me), drawn on the letter before."""
    return unicodedata.category(character).startswith("M")


#: The invisible format characters a name may hold: the zero-width non-joiner and joiner, which
#: scripts and emoji need.
_JOINERS = frozenset("\u200c\u200d")


def _holds_invisible_format(text: str) -> bool:
    """Whether ``text`` holds a format character (Unicode category Cf) other than the joiners:
    the left-to-right and right-to-left marks, the Arabic letter mark, the word joiner and the
    invisible operators, the soft hyphen, interlinear annotation marks, tag characters. Each
    shows as nothing and, as the zero-width space does, makes two names read the same (probe O
    found these stored where the pattern above refused the space)."""
    return any(unicodedata.category(c) == "Cf" and c not in _JOINERS for c in text)


def optional_line(value: object, *, param: str, max_length: int = MAX_TEXT) -> str | None:
    return None if value is None else require_line(value, param=param, max_length=max_length)


def optional_ip_address(value: object, *, param: str) -> str | None:
    """An IPv4 or IPv6 address in its usual written form (``2001:db8::1`` for
    ``2001:0db8:0000::0001``, ``192.0.2.1`` for ``::ffff:192.0.2.1``), or ``None``."""
    if value is None:
        return None
    text = require_text(value, param=param, max_length=64)
    try:
        return written_ip(ipaddress.ip_address(text))
    except ValueError:
        raise ValidationError(f"{param} must be an IPv4 or IPv6 address", param=param) from None


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def unmapped_ip(address: IPAddress) -> IPAddress:
    """``address``, or the IPv4 address that an IPv4-mapped IPv6 address (``::ffff:192.0.2.1``)
    stands for. A dual-stack socket (an ASGI server listening on ``::`` without ``IPV6_V6ONLY``;
    ``refcore serve --host ::`` listens on IPv6 alone) sees every IPv4 client in that form: one
    visitor is one address whichever socket it came through, and an IPv4 proxy network
    (``10.0.0.0/8``) must match its proxies."""
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return address if mapped is None else mapped


def written_ip(address: IPAddress) -> str:
    """The one written form refcore keeps of ``address``: :func:`unmapped_ip`, compressed. Python
    3.11 writes a mapped address in hexadecimal (``::ffff:c000:201``), which no log or dashboard
    shows for an IPv4 visitor."""
    return str(unmapped_ip(address))


def require_email(value: object, *, param: str = "email") -> str:
    text = require_text(value, param=param)
    if not _EMAIL.fullmatch(text):
        raise ValidationError(f"{param} must be an e-mail address", param=param)
    if not text.isascii():
        _require_deliverable_unicode(text, param=param)
    return text


def _require_deliverable_unicode(address: str, *, param: str) -> None:
    """Refuse what no mailbox is named by (probe Q), in an address outside ASCII:

    - an invisible format character (``a\\u200b@b.example``), which let two affiliates of one
      program share a mailbox under addresses that read the same; the joiners stay, as in names
      (scripts need them, and IDNA 2008 allows them in places);
    - a local part with compatibility characters (full-width letters, ``\u2165``, ligatures),
      which NFKC would fold into others: refused, not folded, as in the domain;
    - a domain outside ASCII that IDNA 2008 cannot write in ASCII (:func:`idna_ascii_domain`):
      no relay could be told where to send, and the mailer had sent it raw under SMTPUTF8. A
      full-width ``a@\\uff42.example`` is refused so, rather than taken as ``b.example``.
    """
    if _holds_invisible_format(address):
        raise ValidationError(f"{param} must not hold invisible characters", param=param)
    local, _, domain = address.rpartition("@")
    if not local.isascii() and unicodedata.normalize("NFKC", local) != unicodedata.normalize("NFC", local):
        # The domain's are refused by IDNA 2008 below; the local part's had been kept, so
        # ``\uff42ob@x`` was an affiliate beside ``bob@x``, and a customer under it was not taken
        # for ``bob@x`` referring themself (probe AI).
        raise ValidationError(
            f"{param} must not hold full-width or other compatibility letters: write the letters themselves",
            param=param,
        )
    if not domain.isascii() and idna_ascii_domain(domain) is None:
        raise ValidationError(
            f"{param} must have a domain that can receive mail (IDNA 2008; write full-width or "
            "other compatibility letters as the letters they stand for)",
            param=param,
        )


def idna_ascii_domain(domain: str) -> str | None:
    """``domain`` in the ASCII form of internationalised names (IDNA 2008: ``exämple.com`` is
    ``xn--exmple-cua.com``), or ``None`` when IDNA 2008 refuses it.

    Its letters are lower-cased first, since case means nothing in a domain (``Bücher.de``),
    but none is mapped onto another letter: not by Python's ``"idna"`` codec (IDNA 2003), which
    folds ``straße.de`` into ``strasse.de``, another registrable domain, and drops a zero-width
    joiner (probe O); nor by UTS 46, which reads ``\\u2165`` (a Roman numeral) as ``vi``. So a
    letter whose lower case is ASCII without being ASCII itself (U+212A KELVIN SIGN) stays, and
    is refused."""
    lowered = "".join(c if not c.isascii() and c.lower().isascii() else c.lower() for c in domain)
    try:
        return idna.encode(lowered).decode("ascii")
    except idna.IDNAError:
        return None


def optional_email(value: object, *, param: str = "email") -> str | None:
    return None if value is None else require_email(value, param=param)


def kept_address(value: object, *, param: str = "email") -> str:
    """An e-mail address as refcore keeps and compares it (users, affiliates, signups,
    customers): checked by :func:`require_email`, then :func:`address_key`."""
    return address_key(require_email(value, param=param))


def address_key(address: str) -> str:
    """``address`` in the one form two spellings of it share: lower-cased (``Case@X.example``
    had become a second customer beside ``case@x.example``), its domain in Unicode rather than
    IDNA's ASCII form (:func:`_unicode_domain`) and, outside ASCII, in Unicode's composed form
    NFC (RFC 6532), so that ``é`` typed as one character and as ``e`` with a combining accent is
    one address: one customer, one affiliate of a program, and a customer recognized as the
    affiliate referring themself."""
    lowered = address.strip().lower()
    if "xn--" in lowered:
        lowered = _unicode_domain(lowered)
    return lowered if lowered.isascii() else unicodedata.normalize("NFC", lowered)


def _unicode_domain(address: str) -> str:
    """``address`` with a domain written in IDNA's ASCII form (``xn--bcher-kva.example``) in the
    Unicode one it stands for (``bücher.example``), the form an address typed by a person has:
    the two spellings had been two affiliates of one program, and a customer under one was not
    taken for the affiliate under the other (probe AI). A label IDNA 2008 cannot decode is left."""
    local, at, domain = address.rpartition("@")
    if not at or "xn--" not in domain:
        return address
    try:
        return f"{local}@{idna.decode(domain)}"
    except idna.IDNAError:
        return address


def ascii_lower(text: str) -> str:
    """``text`` lower-cased when it is ASCII, otherwise as it is.

    ``str.lower`` maps one non-ASCII letter onto ASCII: U+212A KELVIN SIGN becomes ``k``. Codes
    and slugs are ASCII; lower-casing a look-alike first had let ``\u212akk`` be stored as the
    code ``kkk`` and capture on it."""
    return text.lower() if text.isascii() else text


def require_link_code(value: object) -> str:
    """A link code as it is stored: 3 to 64 of ``a-z``, ``0-9``, ``_`` and ``-``, any case sent."""
    code = ascii_lower(require_text(value, param="code", max_length=64))
    if not LINK_CODE.fullmatch(code):
        raise ValidationError("code must be 3-64 of a-z, 0-9, _ and -", param="code")
    return code


def require_slug(value: object, *, param: str = "slug") -> str:
    """A program slug as it is stored: 1 to 64 of ``a-z``, ``0-9`` and inner ``-``, any case sent.

    Slugs, like link codes, are accepted in any case and kept lower-case (decisions), so that
    ``UpperSlug`` is the program ``/join/upperslug`` finds and is taken once whatever its case;
    it had been refused (probe J). Lower-cased by :func:`ascii_lower`, as codes are: a Kelvin
    sign is refused, not folded into ``k``."""
    slug = ascii_lower(require_text(value, param=param, max_length=64))
    if not _SLUG.fullmatch(slug):
        raise ValidationError(
            f"{param} must be 1-64 ASCII letters, digits and hyphens, not starting or ending with a hyphen",
            param=param,
        )
    return slug


def require_int(value: object, *, param: str, minimum: int = 0, maximum: int = 2**31 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValidationError(f"{param} must be an integer from {minimum} to {maximum}", param=param)
    return value


def require_bool(value: object, *, param: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{param} must be true or false", param=param)
    return value


def require_choice(value: object, choices: type[E], *, param: str) -> E:
    """A member of a ``StrEnum`` from its string value."""
    try:
        return choices(value)  # type: ignore[call-arg]
    except ValueError:
        allowed = ", ".join(str(getattr(c, "value", c)) for c in choices)  # type: ignore[attr-defined]
        raise ValidationError(f"{param} must be one of: {allowed}", param=param) from None
