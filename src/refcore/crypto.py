"""Encryption of secrets the service must be able to read back (webhook signing secrets).

API keys and session tokens are stored as digests because the service only ever compares them.
A webhook signing secret is different: the service itself signs with it on every delivery, so it
must be recoverable, and it is stored encrypted instead. The key comes from the operator's
``REFCORE_SECRET_KEY`` (any string of at least 32 characters) through HKDF, so the raw setting is
never used as a cipher key and each purpose gets its own derived key.

AES-256-GCM authenticates as well as encrypts: a ciphertext copied to another record (bound by the
``context``) or decrypted under another server key fails loudly instead of yielding garbage.
Pure computation, so it belongs to the core.

Changing the server key is done in steps across a fleet (docs/deployment.md), so a box may hold a
second, **fallback** key (``REFCORE_SECRET_KEY_FALLBACK``) that only ever opens: every process
can then read secrets sealed under either key while the fleet moves from one to the other, and
:meth:`SecretBox.reseal` moves a stored secret to the current key. GCM's tag tells which key a
ciphertext was sealed with (the wrong key fails it), so tokens need no key identifier and those
stored before fallbacks existed are read as they are.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MIN_SECRET_KEY_LENGTH = 32
_VERSION = "v1"
_NONCE_BYTES = 12
_SALT = b"refcore secret box"


#: The settings a key comes from, named in errors (never the key itself).
CURRENT_KEY_SETTING = "REFCORE_SECRET_KEY"
FALLBACK_KEY_SETTING = "REFCORE_SECRET_KEY_FALLBACK"


class SecretKeyError(ValueError):
    """The configured server key is unusable (missing or too short)."""


class DecryptionError(Exception):
    """A ciphertext could not be opened: another server key, another context, or tampering."""


def derive_key(secret_key: str, purpose: str, *, setting: str = CURRENT_KEY_SETTING) -> bytes:
    """A 256-bit key for one purpose, derived from the operator's secret key (``setting`` names
    where that key came from, for the error when it is too short)."""
    if len(secret_key) < MIN_SECRET_KEY_LENGTH:
        raise SecretKeyError(f"{setting} must be at least {MIN_SECRET_KEY_LENGTH} characters long")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=purpose.encode("utf-8"))
    return hkdf.derive(secret_key.encode("utf-8"))


class SecretBox:
    """Seals short strings for storage: ``v1.<base64url(nonce || ciphertext+tag)>``.

    ``context`` is authenticated but not stored (AES-GCM associated data): sealing a secret for
    one App and opening it for another fails, so a row copied between Apps is useless.

    It seals with ``secret_key`` only. ``fallback_key`` (the key before or after it, while a
    fleet changes keys) only opens, and is tried only when the current key's tag fails: without
    one, opening costs exactly one decryption, as it always did.
    """

    __slots__ = ("_aead", "_fallback")

    def __init__(
        self,
        secret_key: str,
        *,
        purpose: str = "webhook-signing-secret",
        fallback_key: str | None = None,
    ) -> None:
        self._aead = AESGCM(derive_key(secret_key, purpose))
        self._fallback = (
            None
            if fallback_key is None
            else AESGCM(derive_key(fallback_key, purpose, setting=FALLBACK_KEY_SETTING))
        )

    def __repr__(self) -> str:
        return "SecretBox(<key hidden>)"

    def seal(self, plaintext: str, *, context: str) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), context.encode("utf-8"))
        return f"{_VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode('ascii')}"

    def open(self, token: str, *, context: str) -> str:
        """The plain text, under the current key or else the fallback; ``DecryptionError`` when
        neither opens it (another key, another context, tampering) or it is no token."""
        plain, _current = self._opened(token, context=context)
        return plain

    def reseal(self, token: str, *, context: str) -> str | None:
        """``token``'s plain text sealed anew under the current key when only the fallback opens
        it; ``None`` when the current key already does (nothing to do). ``DecryptionError`` when
        neither opens it. The plain text never leaves the box."""
        plain, current = self._opened(token, context=context)
        return None if current else self.seal(plain, context=context)

    def _opened(self, token: str, *, context: str) -> tuple[str, bool]:
        """The plain text, and whether the current key (not the fallback) opened it."""
        version, _, payload = token.partition(".")
        if version != _VERSION or not payload:
            raise DecryptionError("unknown ciphertext format")
        try:
            raw = base64.urlsafe_b64decode(payload.encode("ascii"))
        except (binascii.Error, UnicodeEncodeError):
            raise DecryptionError("malformed ciphertext") from None
        if len(raw) <= _NONCE_BYTES:
            raise DecryptionError("malformed ciphertext")
        nonce, sealed, associated = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], context.encode("utf-8")
        try:
            return self._aead.decrypt(nonce, sealed, associated).decode("utf-8"), True
        except InvalidTag:
            if self._fallback is None:
                raise DecryptionError(
                    "ciphertext does not open with this server key (was REFCORE_SECRET_KEY changed?)"
                ) from None
        try:
            return self._fallback.decrypt(nonce, sealed, associated).decode("utf-8"), False
        except InvalidTag:
            raise DecryptionError(
                f"ciphertext opens with neither {CURRENT_KEY_SETTING} nor {FALLBACK_KEY_SETTING}"
            ) from None
