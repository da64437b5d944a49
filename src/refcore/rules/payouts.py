"""Payout rules as plain functions (decisions 5): what a payout takes, when it is ready, CSV safety.

A payout takes *every* available entry of the affiliate, positive and negative alike, and pays
their sum. That is how negative nets carry forward without ever paying a negative amount: a
reversal that arrives after its earning was paid stays available (lowering the balance) until
the next payout nets it against new earnings, and after any payout ``available`` is exactly 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from stdnum import exceptions as stdnum_errors
from stdnum import iban

from refcore.errors import ValidationError
from refcore.models import CommissionEntry, EntryStatus
from refcore.models.payout import PayoutMethod

#: Characters that make a spreadsheet treat a cell as a formula (OWASP "CSV injection").
_FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")

#: The shape every IBAN has, checked first so that the message for text that is no IBAN at all
#: stays the plain one; :func:`normalise_iban` then checks the country's own rules.
_IBAN = re.compile(r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}$")


def payable_entries(entries: Iterable[tuple[CommissionEntry, EntryStatus]]) -> list[CommissionEntry]:
    """The entries a payout would take now: the ``approved`` ones (past their hold, not held by
    an open dispute, not paid, not frozen in another payout), whatever their sign."""
    return [entry for entry, status in entries if status is EntryStatus.APPROVED]


def payout_total(entries: Sequence[CommissionEntry]) -> int:
    return sum(entry.amount for entry in entries)


def is_ready(available: int, minimum_payout: int) -> bool:
    """A payout is due when the available balance is positive and reaches the program minimum."""
    return available > 0 and available >= minimum_payout


def csv_cell(value: str) -> str:
    """Neutralise a text cell that a spreadsheet would run as a formula by prefixing ``'``.

    Applied to every text cell of an export (names and e-mails are affiliate-controlled input);
    numbers are written as numbers and need no escaping.
    """
    if value.startswith(_FORMULA_TRIGGERS):
        return "'" + value
    return value


def normalise_iban(value: str) -> str:
    """Upper case without spaces, once it is a valid IBAN: a country that has IBANs, that
    country's length and account format, and check digits that hold (ISO 13616, mod 97, by
    python-stdnum's registry). A shape alone had let ``DE00…`` (check digits that never hold),
    ``XX…`` and a German IBAN five digits too long be saved, and paid to.

    ASCII only, checked before upper-casing: ``str.upper`` turns U+017F LATIN SMALL LETTER LONG
    S into ``S`` and the ligature U+FB06 into ``ST``, which had made ``\u017fE89…`` a Swedish
    IBAN."""
    compact = re.sub(r"\s+", "", value)
    if not compact.isascii() or not _IBAN.fullmatch(compact := compact.upper()):
        raise ValidationError("iban must be an IBAN (country code, check digits, account)", param="iban")
    try:
        return str(iban.validate(compact))
    except stdnum_errors.ValidationError as refused:
        raise ValidationError(f"iban is not a valid IBAN: {refused}", param="iban") from None


#: The fields each method needs; the others are optional.
REQUIRED_DETAILS: dict[PayoutMethod, tuple[str, ...]] = {
    PayoutMethod.PAYPAL: ("email",),
    PayoutMethod.BANK_TRANSFER: ("account_holder", "iban"),
    PayoutMethod.OTHER: ("notes",),
}
