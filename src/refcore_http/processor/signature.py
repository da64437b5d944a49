"""Verifying a processor event delivery the processor's way.

The header is the processor's own ``Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]``:
HMAC-SHA256 over ``"<t>.<exact raw body>"`` with the installation's webhook signing secret, hex
encoded; several ``v1`` values may be present while the processor rolls a secret, and one match
is enough. The cryptographic check is the official package's
(:meth:`stripe.WebhookSignature.verify_header`, constant-time). The freshness check is done here,
against the server's clock rather than ``time.time()``, and in both directions: a timestamp more
than five minutes in the past (a replayed capture) or in the future is refused.

Every refusal is :class:`SignatureRefused`: the ``invalid_signature`` the client sees, and, for
the server log only, which check failed (:attr:`SignatureRefused.check`). The check names the
check, never the secret, a signature value or the header as sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import stripe

from refcore.errors import InvalidSignature

#: The header the processor sends; its real name, so a real delivery verifies as is.
SIGNATURE_HEADER = "Stripe-Signature"
TOLERANCE = timedelta(minutes=5)


class SignatureRefused(InvalidSignature):
    """``invalid_signature``, with the check that failed for the server log (never sent)."""

    def __init__(self, message: str, *, check: str) -> None:
        super().__init__(message)
        self.check = check


class UnmatchedSignature(SignatureRefused):
    """A well-formed header whose signatures match none of the secrets tried: the one refusal
    that a secret the server could not open (sealed under another key) might have turned into
    a match."""


#: The message of checks 2 and 3 alike (docs/processor.md): the route is no oracle for which
#: accounts are connected.
UNVERIFIED = f"The {SIGNATURE_HEADER} header does not verify"


def signed_at(header: str) -> datetime:
    """The ``t=`` of the header as a UTC datetime."""
    timestamp = _timestamp_of(header)
    if timestamp is None:
        raise SignatureRefused(
            f"The {SIGNATURE_HEADER} header has no single t= timestamp",
            check=f"the {SIGNATURE_HEADER} header is malformed: it has no single t=<unix seconds>",
        )
    return timestamp


def _timestamp_of(header: str) -> datetime | None:
    """The header's one ``t=``, when it is plain ASCII digits; else ``None``.

    The signature is checked by the processor's package, which reads the first item keyed
    exactly ``t`` with ``int()``: that takes ``+123``, `` 123`` and ``1_23`` too. Had the
    freshness check read another ``t`` (the first that was all digits), a captured delivery
    could be replayed at any later time by sending ``t=+<old>,t=<now>``: the old time verifies
    the signature and the new one passes the tolerance. One ``t``, spelt only in digits, is
    read the same way by both."""
    values = [
        value for key, _, value in (item.partition("=") for item in header.split(",")) if key.strip() == "t"
    ]
    if len(values) != 1 or not (values[0].isascii() and values[0].isdigit()):
        return None
    try:
        return datetime.fromtimestamp(int(values[0]), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _malformation(header: str) -> str | None:
    """What is wrong with the header's form, its ``t=`` aside (:func:`signed_at` refused that
    before the signature was checked); for the log: names the part, never shows it."""
    items = [item.strip().partition("=") for item in header.split(",")]
    if not any(key == "v1" and value for key, _, value in items):
        return "it has no v1=<signature>"
    return None


def header_missing() -> SignatureRefused:
    """The refusal of a delivery without the signature header (checked before its body is read)."""
    return SignatureRefused(
        f"The {SIGNATURE_HEADER} header is missing", check=f"the {SIGNATURE_HEADER} header is missing"
    )


def verify_signature(
    payload: bytes, header: str | None, secrets: Iterable[str | None], *, now: datetime
) -> int:
    """The position in ``secrets`` of the first with which ``header`` signs ``payload``,
    recently; ``invalid_signature`` when none does. Several secrets are an account's several
    connections (``refcore.models.processor``), read one at a time and tried in order, each with
    the constant-time check; ``None`` stands for one that cannot be tried (its position counts)."""
    if not header:
        raise header_missing()
    timestamp = signed_at(header)  # before the signature: the one t= both checks then read
    matching: int | None = None
    tried = 0
    try:
        for position, secret in enumerate(secrets):
            if secret is None:
                continue
            tried += 1
            if _signs(payload, header, secret):
                matching = position
                break
    except UnicodeDecodeError:
        raise SignatureRefused(
            UNVERIFIED, check="the body is not UTF-8, so no signature of it can match"
        ) from None
    if matching is None:
        malformation = _malformation(header)
        if malformation is not None:
            raise SignatureRefused(
                UNVERIFIED, check=f"the {SIGNATURE_HEADER} header is malformed: {malformation}"
            )
        raise UnmatchedSignature(
            UNVERIFIED,
            check="no v1 signature matches the connection's webhook secret"
            if tried == 1
            else f"no v1 signature matches the webhook secret of any of its {tried} connections",
        )
    skew = now - timestamp
    if abs(skew) > TOLERANCE:
        direction = "before" if skew > timedelta(0) else "after"
        raise SignatureRefused(
            f"The {SIGNATURE_HEADER} timestamp is outside the {int(TOLERANCE.total_seconds())} s tolerance",
            check=(
                f"the t= timestamp is {int(abs(skew).total_seconds())} s {direction} the server's clock, "
                f"outside the {int(TOLERANCE.total_seconds())} s tolerance"
            ),
        )
    return matching


def _signs(payload: bytes, header: str, secret: str) -> bool:
    try:
        stripe.WebhookSignature.verify_header(payload, header, secret, tolerance=None)
    except stripe.SignatureVerificationError:
        return False
    return True
