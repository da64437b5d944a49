"""A repository filter on a field its model lacks is refused, the same way on every store,
whether or not the table holds a record: the memory store had answered ``[]`` for an empty
table (and raised ``AttributeError`` for a full one), so a misspelt filter passed every test
that ran on no data and failed only against the SQL store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from refcore.models import PayoutRequest
from refcore.models.payout import PayoutDetails
from refcore.ports.lookups import Lookup
from refcore.services.runtime import Runtime, Tx

READS: dict[str, Callable[[Any], object]] = {
    "find_one": lambda repository: repository.find_one({"program_affiliate": "paf_x"}),
    "find_one for update": lambda repository: repository.find_one(
        {"program_affiliate": "paf_x"}, for_update=True
    ),
    "find_all": lambda repository: repository.find_all({"program_affiliate": "paf_x"}),
    "page": lambda repository: repository.page({"program_affiliate": "paf_x"}, limit=10, before=None),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_a_filter_on_a_field_the_model_lacks_is_refused_on_an_empty_table(
    runtime: Runtime, read: str
) -> None:
    def work(tx: Tx) -> object:
        assert tx.uow.payout_requests.find_all({}) == []  # nothing stored: the check is on the filter
        return READS[read](tx.uow.payout_requests)

    with pytest.raises(ValueError, match="PayoutRequest cannot be filtered on 'program_affiliate'"):
        runtime.transaction(work)


def test_a_lookup_on_a_field_the_model_lacks_is_refused_too(runtime: Runtime) -> None:
    lookups = (
        Lookup("payout_details", PayoutDetails, {"program_affiliate_id": "paf_x"}),
        Lookup("payout_requests", PayoutRequest, {"program_affiliate": "paf_x"}),
    )
    with pytest.raises(ValueError, match="cannot be filtered on 'program_affiliate'"):
        runtime.read(lambda tx: tx.uow.look_up(*lookups))
