"""Credentials: generated here, shown once, stored only as SHA-256 digests.

Also where a credential is recognized, so that nothing refcore writes back (an error's message,
interface 5.3) or logs (``refcore_http.logs``) quotes one that a caller pasted where an ID, a
code or a query parameter belonged. One recognizer for both, so that they cannot disagree.
"""

from __future__ import annotations

import hashlib
import re
import secrets as _random

#: The word every credential refcore issues starts with, before an underscore: API keys
#: (``key_app_``, ``key_test_app_``, ``key_managed_``, ``key_test_managed_``, ``key_aff_``),
#: dashboard sessions (``sess_``), hosted-signup confirmation tokens (``join_``) and webhook
#: signing secrets (``whsec_``).
CREDENTIAL_WORDS = ("key", "sess", "join", "whsec")

#: What a credential reads as where refcore would have written it: a log line, a message.
REDACTED = "[redacted]"

#: A credential's start: an API key's prefix (``key_`` and its kind: an API key's ID, ``akey_…``,
#: is no credential), or one of the other words and its underscore. Wherever it stands, also
#: glued to other letters: ``xkey_app_…`` (a key with a stray character before it) had been
#: quoted whole in messages and the access log (probe Q). Searched in lower-cased text, so
#: ``KEY_APP_…`` is a credential too.
_START = r"(?:key_(?:test_)?(?:app|managed|aff)|sess|join|whsec)_"
_CREDENTIAL = re.compile(_START)


#: A credential inside longer text: its start and at least 20 more characters of a token
#: (refcore's own carry 43 random ones). Prefixes named in a message (``key_aff_…``) are
#: shorter and stay.
_CREDENTIAL_TOKEN = re.compile(rf"{_START}[0-9a-z_-]{{20,}}", re.IGNORECASE)


def new_secret(prefix: str) -> str:
    return f"{prefix}{_random.token_urlsafe(32)}"


def digest(secret: str) -> str:
    """SHA-256 of the secret's UTF-8. An unpaired surrogate (which no issued secret holds) is
    encoded as it is, so a library caller's such credential is unknown, as any other wrong one,
    instead of a raw ``UnicodeEncodeError`` (probe L)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def holds_credential(text: str) -> bool:
    """Whether ``text`` (already decoded) may hold a credential refcore issued.

    Shaped like one is enough, and no lookup is needed: refcore's own IDs never read this way
    (``akey_…``, ``clk_…``), so what does is most likely a secret sent in the wrong place. A
    false alarm (a link code ``spring_sale_key_2``) costs only the value's echo in a message."""
    return _CREDENTIAL.search(text.lower()) is not None


def quotable(value: object) -> bool:
    """Whether a message may quote ``value``, a caller's ID, code or name: a string that
    :func:`holds_credential` does not recognize. Messages leave out any other."""
    return isinstance(value, str) and not holds_credential(value)


def shown(value: str) -> str:
    """``value`` as a message or a ``param`` may quote it: itself, or :data:`REDACTED` when it
    is shaped like a credential, for a message whose sentence needs the value in it (``code …
    is taken``) rather than leaving it out."""
    return value if quotable(value) else REDACTED


def without_credentials(text: str) -> str:
    """``text`` with every credential-shaped token in it written as :data:`REDACTED`.

    The last guard of an error's message and ``param`` on the way out (``refcore_http.errors``):
    the messages that quote a caller's value check it with :func:`shown` or :func:`quotable`,
    but a value can reach a message by other roads (a body member named like a key came back
    whole in ``Unknown field …``, probe K), and one guard where every message passes catches them
    all."""
    return _CREDENTIAL_TOKEN.sub(REDACTED, text)
