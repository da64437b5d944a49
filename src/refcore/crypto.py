"""Encryption of secrets the service must be able to read back (webhook signing secrets).

API keys and session tokens are stored as digests because the service only ever compares them.
A webhook signing secret is different: the service itself signs with it on every delivery, so it
must be recoverable, and it is stored encrypted instead. The key comes from the operator's
``REFCORE_SECRET_KEY`` (any string of at least 32 characters) through HKDF, so the raw setting is
never used as a cipher key and each purpose gets its own derived key.

AES-256-GCM authenticates as well as encrypts: a ciphertext copied to another record (bound by the
``context``) or decrypted under another server key fails loudly instead of yielding garbage.
Pure computation, so it belongs to the core.
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


class SecretKeyError(ValueError):
    """The configured server key is unusable (missing or too short)."""


class DecryptionError(Exception):
    """A ciphertext could not be opened: another server key, another context, or tampering."""


def derive_key(secret_key: str, purpose: str) -> bytes:
    """A 256-bit key for one purpose, derived from the operator's secret key."""
    if len(secret_key) < MIN_SECRET_KEY_LENGTH:
        raise SecretKeyError(f"REFCORE_SECRET_KEY must be at least {MIN_SECRET_KEY_LENGTH} characters long")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=purpose.encode("utf-8"))
    return hkdf.derive(secret_key.encode("utf-8"))


class SecretBox:
    """Seals short strings for storage: ``v1.<base64url(nonce || ciphertext+tag)>``.

    ``context`` is authenticated but not stored (AES-GCM associated data): sealing a secret for
    one App and opening it for another fails, so a row copied between Apps is useless.
    """

    __slots__ = ("_aead",)

    def __init__(self, secret_key: str, *, purpose: str = "webhook-signing-secret") -> None:
        self._aead = AESGCM(derive_key(secret_key, purpose))

    def __repr__(self) -> str:
        return "SecretBox(<key hidden>)"

    def seal(self, plaintext: str, *, context: str) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), context.encode("utf-8"))
        return f"{_VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode('ascii')}"

    def open(self, token: str, *, context: str) -> str:
        version, _, payload = token.partition(".")
        if version != _VERSION or not payload:
            raise DecryptionError("unknown ciphertext format")
        try:
            raw = base64.urlsafe_b64decode(payload.encode("ascii"))
        except (binascii.Error, UnicodeEncodeError):
            raise DecryptionError("malformed ciphertext") from None
        if len(raw) <= _NONCE_BYTES:
            raise DecryptionError("malformed ciphertext")
        try:
            plain = self._aead.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], context.encode("utf-8"))
        except InvalidTag:
            raise DecryptionError(
                "ciphertext does not open with this server key (was REFCORE_SECRET_KEY changed?)"
            ) from None
        return plain.decode("utf-8")
