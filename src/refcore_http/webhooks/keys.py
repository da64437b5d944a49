"""The server key (``REFCORE_SECRET_KEY``) that seals webhook signing secrets, and its absence.

A production server must have its own key: anyone who knows the key and reads the database can
recover every signing secret. Requiring it unconditionally would break the one-command start on
a fresh machine (``./scripts/serve``), so the rule is:

- with ``REFCORE_SECRET_KEY`` set, it is used;
- without it, a server that listens on a loopback address only (a developer's machine) or keeps
  nothing on disk (``memory://``) uses a fixed, public **development key** and says so loudly on
  stderr;
- without it, a server that listens on any other interface and stores secrets in a database
  refuses to start.

The warning never prints a key, and the development key is public on purpose: it protects
nothing, which is exactly what the warning says.
"""

from __future__ import annotations

import functools
import ipaddress
import sys
from typing import TextIO

from refcore.crypto import SecretBox
from refcore_http.settings import Settings, SettingsError
from refcore_http.store import is_memory, is_postgresql

#: Public, therefore protecting nothing; only ever used on loopback and announced loudly.
DEVELOPMENT_SECRET_KEY = "refcore-development-key:not-secret:set-REFCORE_SECRET_KEY"

_warned = False


def is_loopback_host(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def effective_secret_key(settings: Settings) -> str:
    return settings.secret_key or DEVELOPMENT_SECRET_KEY


def require_secret_key(settings: Settings, *, stderr: TextIO | None = None) -> None:
    """Refuse to serve a database beyond loopback, or a PostgreSQL database anywhere, without
    ``REFCORE_SECRET_KEY``; otherwise warn (once per process) that the public development key is
    in use.

    PostgreSQL is where several processes share one database, behind a proxy that reaches them on
    loopback: one process started without the key had encrypted a rotated webhook secret with
    the public key, and every keyed process then failed that App's deliveries, while its own
    deliveries of secrets sealed with the real key failed too (probe M)."""
    global _warned
    # The public key set by hand is no key either: deployment.md hands it out as the old key of a
    # change, and set in the wrong variable it had served PostgreSQL and every interface without
    # a word (probe AN).
    if settings.secret_key is not None and settings.secret_key != DEVELOPMENT_SECRET_KEY:
        _warn_of_doubtful_keys(settings, stderr or sys.stderr)
        return
    missing = (
        "is required"
        if settings.secret_key is None
        else "is the public development key, which protects nothing; a key of your own is required"
    )
    if is_postgresql(settings.database_url):
        raise SettingsError(
            f"REFCORE_SECRET_KEY {missing} with PostgreSQL: every process sharing the database must "
            "encrypt webhook signing secrets with the same key (a random string of 32+ characters)"
        )
    if not is_loopback_host(settings.host) and not is_memory(settings.database_url):
        raise SettingsError(
            f"REFCORE_SECRET_KEY {missing} to serve on {settings.host}: set it to a random string of "
            "at least 32 characters (it encrypts webhook signing secrets)"
        )
    if _warned:
        return
    _warned = True
    print(
        "\n".join(
            [
                "=" * 78,
                "refcore: WARNING: REFCORE_SECRET_KEY is "
                + ("not set." if settings.secret_key is None else "the public development key."),
                "refcore: Webhook signing secrets are encrypted with a PUBLIC DEVELOPMENT KEY.",
                "refcore: Fine on your own machine; never in production. Set REFCORE_SECRET_KEY",
                "refcore: (32+ random characters) before exposing this server.",
                "=" * 78,
            ]
        ),
        file=stderr or sys.stderr,
        flush=True,
    )


#: Fewer different characters than this, and a key of 32 or more is no random string.
MIN_DISTINCT_KEY_CHARACTERS = 10

_doubted: set[tuple[str, str]] = set()


def doubts_about(key: str) -> list[str]:
    """Why a key that passes the settings' rule (32+ characters of text) may still be a mistake.

    Neither refuses the key: a server already running with it would stop at upgrade, and a key
    can only be changed in the steps of docs/deployment.md. A space or line break at either end
    is part of the key, and the tools that hand keys to processes (a shell's ``$(cat file)``, an
    env file, a secret store) keep or strip it differently, so one process of a fleet can end up
    with other bytes than the rest and open none of their secrets (probe R found a key of 40
    spaces and a trailing newline both accepted)."""
    doubts = []
    if key != key.strip():
        doubts.append("begins or ends with whitespace (a space, tab or line break), which is part of the key")
    if len(set(key)) < MIN_DISTINCT_KEY_CHARACTERS:
        doubts.append(
            f"has fewer than {MIN_DISTINCT_KEY_CHARACTERS} different characters, so it is not a random string"
        )
    return doubts


def _warn_of_doubtful_keys(settings: Settings, stderr: TextIO) -> None:
    """One warning per key and doubt per process (the server checks its settings twice at start)."""
    named = (
        ("REFCORE_SECRET_KEY", settings.secret_key),
        ("REFCORE_SECRET_KEY_FALLBACK", settings.secret_key_fallback),
    )
    for name, key in named:
        for doubt in doubts_about(key) if key is not None else ():
            if (name, doubt) in _doubted:
                continue
            _doubted.add((name, doubt))
            print(
                f"refcore: WARNING: {name} {doubt}; every process must get exactly the same key. "
                "To change it, follow docs/deployment.md (Changing REFCORE_SECRET_KEY).",
                file=stderr,
                flush=True,
            )


@functools.lru_cache(maxsize=4)
def _box(secret_key: str, fallback_key: str | None) -> SecretBox:
    return SecretBox(secret_key, fallback_key=fallback_key)


def secret_box(settings: Settings) -> SecretBox:
    """The box for this server's key and its fallback, if any (derived once per pair of keys, not
    per request; without a fallback, opening costs one decryption as before)."""
    return _box(effective_secret_key(settings), settings.secret_key_fallback)
