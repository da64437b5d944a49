"""An affiliate's payout balance, summed by the store in one aggregate read (decisions 5).

The balance used to be derived by loading every Live entry of the affiliate, its payment and
its payout items into Python, which made ``GET /v1/payout-balance`` as slow as the affiliate's
history was long. The store now derives each entry's status inside one query (see
:mod:`refcore.ports.ledger`); the rule and its precedence stay the core's, and the contract suite
checks that both give the same sums. Payouts, which need the payable entries themselves, keep
using :func:`refcore.services.payout_state.funds_of`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from refcore.models import EntryStatus, Mode
from refcore.rules.entry_status import Balance
from refcore.services.runtime import Tx


def live_balance(tx: Tx, program_affiliate_id: str) -> Balance:
    """Pending, held, available (approved, net of negatives), processing and paid, Live only."""
    return live_balance_at(tx, program_affiliate_id, tx.now)


def live_balance_at(tx: Tx, program_affiliate_id: str, moment: datetime) -> Balance:
    """:func:`live_balance` as the ledger stands, with the statuses entries have at ``moment``
    (a payout compares its own moment with a payout request's)."""
    return _balance(tx.uow.ledger().status_sums(program_affiliate_id, Mode.LIVE, moment))


def live_balances(tx: Tx, program_affiliate_ids: Sequence[str]) -> dict[str, Balance]:
    """:func:`live_balance` of each affiliate, in one call to the store (a page of ready payouts)."""
    sums = tx.uow.ledger().status_sums_of(program_affiliate_ids, Mode.LIVE, tx.now)
    return {affiliate: _balance(of_affiliate) for affiliate, of_affiliate in sums.items()}


def _balance(sums: Mapping[EntryStatus, int]) -> Balance:
    return Balance(
        pending=sums[EntryStatus.PENDING],
        held=sums[EntryStatus.HELD],
        available=sums[EntryStatus.APPROVED],
        paid=sums[EntryStatus.PAID],
        processing=sums[EntryStatus.PROCESSING],
    )
