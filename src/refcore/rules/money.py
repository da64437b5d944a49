"""Money is an integer of minor units that fits a signed 32-bit integer, in a lowercase ISO 4217
currency (interface 2.2)."""

from __future__ import annotations

import re
from collections.abc import Collection

import pycountry

from refcore.errors import ValidationError
from refcore.validation import exact_str

INT32_MAX = 2**31 - 1
_CURRENCY = re.compile(r"[a-z]{3}")


def _current_iso_4217_codes() -> frozenset[str]:
    return frozenset(currency.alpha_3.lower() for currency in pycountry.currencies)


#: Every code ISO 4217 lists today, lowercase, as pycountry's copy of the standard has it. Read
#: once at import, so checking a payment's currency is one set lookup. A code ISO withdraws drops
#: out when pycountry is upgraded; a program that already uses it keeps it (see
#: :func:`require_iso_4217`).
ISO_4217_CODES: frozenset[str] = _current_iso_4217_codes()


def require_amount(value: object, *, param: str, positive: bool) -> int:
    """The amount as ``int``; JSON ``true``, ``2900.0`` and ``"2900"`` are refused, not coerced."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{param} must be an integer number of minor units", param=param)
    # An int subclass (an IntEnum, say) is read as the number it holds, never through its own
    # comparisons: one whose ``__eq__`` always held had replayed another payment (probe AD).
    value = value if type(value) is int else int.__int__(value)
    if value > INT32_MAX:
        raise ValidationError(f"{param} must fit a signed 32-bit integer", param=param)
    if positive and value <= 0:
        raise ValidationError(f"{param} must be greater than 0", param=param)
    if value < 0:
        raise ValidationError(f"{param} must not be negative", param=param)
    return value


def require_currency_format(value: object, *, param: str = "currency") -> str:
    """A string of three lowercase ASCII letters: the form of a currency, not yet whether ISO 4217
    lists it (:func:`require_iso_4217`, which may need the program's currency)."""
    # fullmatch, not match: ``$`` also matches before a trailing newline, so "usd\n" would pass.
    if not isinstance(value, str) or not _CURRENCY.fullmatch(value):
        raise ValidationError(f"{param} must be a lowercase three-letter ISO 4217 code", param=param)
    return exact_str(value)


def is_iso_4217(code: str) -> bool:
    return code in ISO_4217_CODES


def require_iso_4217(code: str, *, param: str = "currency", in_use: Collection[str] = ()) -> str:
    """``code`` if ISO 4217 lists it, or if it is one of ``in_use``: currencies that programs took
    earlier, which they keep after ISO withdraws them (and pycountry is upgraded)."""
    if code not in ISO_4217_CODES and code not in in_use:
        raise ValidationError(f"{param} must be an ISO 4217 currency code; {code} is not one", param=param)
    return code


def require_currency(value: object, *, param: str = "currency") -> str:
    """A currency something new may take (a program): lowercase, and listed by ISO 4217 today."""
    return require_iso_4217(require_currency_format(value, param=param), param=param)
