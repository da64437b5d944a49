"""The request a receiver gets (interface 6.2, 6.3): the exact body bytes and the signed headers.

The signature is ``v1=`` + hex HMAC-SHA256 over ``<timestamp>.<raw body>``, keyed with the whole
secret string ``whsec_…`` as UTF-8 bytes (decisions 11). The body is serialised once, here, and
those same bytes are both signed and sent, so a receiver that verifies the raw body always
agrees with us, whatever JSON library either side uses.
"""

from __future__ import annotations

import hashlib
import hmac
import json

from refcore.models import Event
from refcore.representation import envelope

SCHEME = "v1"
VERSION = "1"
ID_HEADER = "X-Service-Webhook-Id"
EVENT_HEADER = "X-Service-Webhook-Event"
TIMESTAMP_HEADER = "X-Service-Webhook-Timestamp"
SIGNATURE_HEADER = "X-Service-Webhook-Signature"
VERSION_HEADER = "X-Service-Webhook-Version"
USER_AGENT = "refcore-webhooks/1"


def body_of(event: Event) -> bytes:
    """The envelope of interface 2.9 as compact UTF-8 JSON."""
    return json.dumps(envelope(event), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def signature(secret: str, timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"{SCHEME}={digest}"


def signed_headers(event: Event, body: bytes, *, secret: str, timestamp: int) -> dict[str, str]:
    """Every header of interface 6.2 (plus content type and user agent) for one delivery."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        ID_HEADER: event.id,
        EVENT_HEADER: event.type.value,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
        VERSION_HEADER: VERSION,
    }
