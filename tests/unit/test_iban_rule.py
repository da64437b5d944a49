"""Payout details' IBANs are valid IBANs (rules/payouts.py ``normalise_iban``), not just shaped
like one: the money is sent to what is saved here."""

from __future__ import annotations

import pytest

from refcore.errors import ValidationError
from refcore.rules.payouts import normalise_iban


@pytest.mark.parametrize(
    ("sent", "saved"),
    [
        ("DE89 3704 0044 0532 0130 00", "DE89370400440532013000"),
        ("gb82west12345698765432", "GB82WEST12345698765432"),
        ("NL91ABNA0417164300", "NL91ABNA0417164300"),
        ("FR14 2004 1010 0505 0001 3M02 606", "FR1420041010050500013M02606"),
    ],
)
def test_a_valid_iban_is_saved_compact_and_upper_case(sent: str, saved: str) -> None:
    assert normalise_iban(sent) == saved


@pytest.mark.parametrize(
    "sent",
    [
        "DE00370400440532013000",  # check digits 00 never hold
        "DE89370400440532013001",  # one digit off: mod 97 fails
        "XX89370400440532013000",  # no such country
        "DE8937040044053201300099999",  # five digits too long for Germany
        "NL91ABNA041716430",  # one short for the Netherlands
        "123",
        "\u017fE89370400440532013000",  # LONG S upper-cases to S: a Swedish IBAN it is not
        "GB82WE\ufb0612345698765432",  # the ligature "st" upper-cases to ST
        "GB82\u0131NGB12345698765432",  # dotless i upper-cases to I
        "DE89\uff13704 0044 0532 0130 00",  # a full-width digit
    ],
)
def test_an_iban_that_is_not_valid_is_a_validation_error(sent: str) -> None:
    with pytest.raises(ValidationError) as refused:
        normalise_iban(sent)
    assert refused.value.param == "iban"
