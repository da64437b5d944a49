"""Verifying a processor event delivery the processor's way.

The header is the processor's own ``Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]``:
HMAC-SHA256 over ``"<t>.<exact raw body>"`` with the installation's webhook signing secret, hex
encoded; several ``v1`` values may be present while the processor rolls a secret, and one match
is enough. The cryptographic check is the official package's
(:meth:`stripe.WebhookSignature.verify_header`, constant-time). The freshness check is done here,
against the server's clock rather than ``time.time()``, and in both directions: a timestamp more
than five minutes in the past (a replayed capture) or in the future is refused.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import stripe

from refcore.errors import InvalidSignature

#: The header the processor sends; its real name, so a real delivery verifies as is.
SIGNATURE_HEADER = "Stripe-Signature"
TOLERANCE = timedelta(minutes=5)


def signed_at(header: str) -> datetime:
    """The ``t=`` of the header as a UTC datetime."""
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t" and value.isdigit():
            return datetime.fromtimestamp(int(value), tz=UTC)
    raise InvalidSignature(f"The {SIGNATURE_HEADER} header has no t= timestamp")


def verify_signature(payload: bytes, header: str | None, secret: str, *, now: datetime) -> None:
    """Raise ``invalid_signature`` unless ``header`` signs ``payload`` with ``secret`` recently."""
    if not header:
        raise InvalidSignature(f"The {SIGNATURE_HEADER} header is missing")
    try:
        stripe.WebhookSignature.verify_header(payload, header, secret, tolerance=None)
    except (stripe.SignatureVerificationError, UnicodeDecodeError):
        raise InvalidSignature(f"The {SIGNATURE_HEADER} header does not verify") from None
    if abs(now - signed_at(header)) > TOLERANCE:
        raise InvalidSignature(
            f"The {SIGNATURE_HEADER} timestamp is outside the {int(TOLERANCE.total_seconds())} s tolerance"
        )
