"""Credentials: generated here, shown once, stored only as SHA-256 digests."""

from __future__ import annotations

import hashlib
import secrets as _random


def new_secret(prefix: str) -> str:
    return f"{prefix}{_random.token_urlsafe(32)}"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()
