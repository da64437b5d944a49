"""Races on the memory store (threads): an entry is paid at most once whatever runs first."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore_memstore import memory_runtime
from tests.payouts.races import race_mark_paid_report_and_batch, run_together
from tests.payouts.world import build_payout_world


@pytest.mark.parametrize("attempt", range(20))
def test_mark_paid_a_succeeded_report_and_a_second_batch_pay_each_entry_once(attempt: int) -> None:
    clock = ManualClock()
    race_mark_paid_report_and_batch(build_payout_world(memory_runtime(clock=clock), clock))


def test_two_mark_paids_at_once_pay_once() -> None:
    clock = ManualClock()
    pw = build_payout_world(memory_runtime(clock=clock), clock)
    pw.earn(10_000)
    pw.past_hold()
    results = run_together([pw.mark_paid, pw.mark_paid])
    codes = sorted(getattr(r, "code", "ok") for r in results)
    assert codes == ["ok", "state_conflict"]
    assert pw.balance().paid == 2000
