"""Money is an integer of minor units that fits a signed 32-bit integer (interface 2.2)."""

from __future__ import annotations

import re

from refcore.errors import ValidationError

INT32_MAX = 2**31 - 1
_CURRENCY = re.compile(r"[a-z]{3}")


def require_amount(value: object, *, param: str, positive: bool) -> int:
    """The amount as ``int``; JSON ``true``, ``2900.0`` and ``"2900"`` are refused, not coerced."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{param} must be an integer number of minor units", param=param)
    if value > INT32_MAX:
        raise ValidationError(f"{param} must fit a signed 32-bit integer", param=param)
    if positive and value <= 0:
        raise ValidationError(f"{param} must be greater than 0", param=param)
    if value < 0:
        raise ValidationError(f"{param} must not be negative", param=param)
    return value


def require_currency(value: object, *, param: str = "currency") -> str:
    # fullmatch, not match: ``$`` also matches before a trailing newline, so "usd\n" would pass.
    if not isinstance(value, str) or not _CURRENCY.fullmatch(value):
        raise ValidationError(f"{param} must be a lowercase three-letter ISO 4217 code", param=param)
    return value
