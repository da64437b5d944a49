"""Currency must be an ISO 4217 code (interface 2.2), checked against pycountry's copy of the
standard: the rule itself, without a store. The services' use of it is in
tests/contract/test_currency_codes.py, the API's in tests/http/test_currency_codes.py."""

from __future__ import annotations

import pycountry
import pytest

from refcore.errors import ValidationError
from refcore.rules.money import (
    ISO_4217_CODES,
    is_iso_4217,
    require_currency,
    require_currency_format,
    require_iso_4217,
)

#: Codes ISO 4217 has withdrawn (Croatian kuna 2023, Sierra Leonean leone SLL, Mauritanian
#: ouguiya MRO): pycountry no longer lists them.
WITHDRAWN = ["hrk", "sll", "mro"]


@pytest.mark.parametrize("code", ["usd", "jpy", "eur", "gbp", "chf", "xcg", "zwg"])
def test_currency_must_be_an_iso_4217_code_listed_codes_are_accepted(code: str) -> None:
    assert require_currency(code) == code
    assert is_iso_4217(code)


@pytest.mark.parametrize("code", ["zzz", "xyz", "abc", "usa", *WITHDRAWN])
def test_currency_must_be_an_iso_4217_code_other_lowercase_codes_are_validation_errors(code: str) -> None:
    with pytest.raises(ValidationError) as caught:
        require_currency(code)
    assert (caught.value.code, caught.value.param) == ("validation_error", "currency")
    assert "ISO 4217" in str(caught.value) and code in str(caught.value)
    assert not is_iso_4217(code)


@pytest.mark.parametrize(
    "value",
    ["USD", "Usd", "ZZZ", "us", "usdd", "", " usd", "usd\n", "us1", "üsd", None, 840, ["usd"], b"usd"],
)
def test_currency_must_be_an_iso_4217_code_the_form_is_checked_first(value: object) -> None:
    for check in (require_currency, require_currency_format):
        with pytest.raises(ValidationError) as caught:
            check(value)
        assert caught.value.param == "currency"
        assert "lowercase three-letter" in str(caught.value)


def test_currency_must_be_an_iso_4217_code_the_param_names_the_field() -> None:
    with pytest.raises(ValidationError) as caught:
        require_currency("zzz", param="payout.currency")
    assert caught.value.param == "payout.currency"


def test_currency_must_be_an_iso_4217_code_unless_already_in_use() -> None:
    """A program keeps the currency it took after ISO withdraws it (and pycountry drops it)."""
    assert not is_iso_4217("hrk")
    assert require_iso_4217("hrk", in_use=("hrk",)) == "hrk"
    assert require_iso_4217("usd", in_use=("hrk",)) == "usd"
    with pytest.raises(ValidationError):
        require_iso_4217("hrk", in_use=("usd",))
    with pytest.raises(ValidationError):
        require_iso_4217("xyz", in_use=("hrk",))


def test_currency_must_be_an_iso_4217_code_the_list_is_pycountrys_read_once() -> None:
    assert isinstance(ISO_4217_CODES, frozenset)
    assert {currency.alpha_3.lower() for currency in pycountry.currencies} == ISO_4217_CODES
    assert len(ISO_4217_CODES) > 150
    assert all(require_currency_format(code) == code for code in ISO_4217_CODES)
    assert {"usd", "eur", "jpy"} <= ISO_4217_CODES
    assert ISO_4217_CODES.isdisjoint(WITHDRAWN)
