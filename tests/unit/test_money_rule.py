"""Money is an integer of minor units fitting a signed 32-bit integer (interface 2.2, 8)."""

from __future__ import annotations

import pytest

from refcore.errors import ValidationError
from refcore.rules.money import INT32_MAX, require_amount, require_currency


@pytest.mark.parametrize("value", [0, 1, 2_900, INT32_MAX])
def test_interface_2_2_payment_amount_is_a_non_negative_int32(value: int) -> None:
    assert require_amount(value, param="amount", positive=False) == value


@pytest.mark.parametrize("value", [1, INT32_MAX])
def test_interface_2_2_refund_and_dispute_amounts_are_positive_int32(value: int) -> None:
    assert require_amount(value, param="amount", positive=True) == value


@pytest.mark.parametrize(
    ("value", "positive"),
    [
        (True, False),
        (False, False),
        (2_900.0, False),
        ("2900", False),
        (None, False),
        (INT32_MAX + 1, False),
        (2**63, False),
        (-1, False),
        (0, True),
        (-1, True),
        (INT32_MAX + 1, True),
        (True, True),
    ],
    ids=repr,
)
def test_interface_2_2_amounts_are_refused_not_coerced(value: object, positive: bool) -> None:
    with pytest.raises(ValidationError) as caught:
        require_amount(value, param="amount", positive=positive)
    assert caught.value.code == "validation_error"
    assert caught.value.param == "amount"


def test_interface_2_2_amount_param_names_the_field() -> None:
    with pytest.raises(ValidationError) as caught:
        require_amount(-5, param="refund.amount", positive=True)
    assert caught.value.param == "refund.amount"


@pytest.mark.parametrize("value", ["usd", "eur", "jpy"])
def test_interface_2_2_currency_is_lowercase_iso_4217(value: str) -> None:
    assert require_currency(value) == value


@pytest.mark.parametrize("value", ["USD", "Usd", "us", "usdd", "", " usd", "usd\n", "us1", None, 840])
def test_interface_2_2_other_currencies_are_refused(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        require_currency(value)
    assert caught.value.param == "currency"
