"""What an App may configure as its webhook endpoint URL (interface 4.6, decisions 7).

Only the shape is checked here, when the endpoint is configured: HTTPS, a host, no credentials.
Whether the host is a private or local address can only be known after DNS resolution, at the
moment of delivery, so that check belongs to the delivering adapter (a name that resolves to a
public address today may resolve to a private one tomorrow).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from refcore.errors import ValidationError

MAX_URL_LENGTH = 2048


def require_webhook_url(value: object) -> str:
    """The URL, if it is an absolute ``https://`` URL with a host and no user information.

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
    return value
