"""A payout race any store must survive: mark-paid, a succeeded report and a second batch at once.

The affiliate has a dispatched (``ready``) execution and newer available entries. Three threads
start together:

- mark-paid for the affiliate (completes the ready execution, or pays what is available),
- the external system reporting the ready execution ``succeeded``,
- the Developer preparing another batch (which may take the newer entries);

whatever the interleaving, every entry is paid at most once, the ready execution succeeds exactly
once, and the books balance.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from refcore.errors import RefcoreError
from refcore.models import EventType
from refcore.models.payout import PayoutExecutionStatus
from refcore.services import commissions, payout_executions, payouts
from refcore.services.runtime import Tx
from tests.payouts.world import PayoutWorld


def run_together(calls: list[Callable[[], Any]]) -> list[Any]:
    """Start every call at the same moment on its own thread; each result or the error raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def runner(index: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except RefcoreError as error:
            results[index] = error

    threads = [threading.Thread(target=runner, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def race_mark_paid_report_and_batch(pw: PayoutWorld) -> None:
    pw.earn(10_000)
    pw.past_hold()
    batch = pw.prepare()
    [ready] = pw.dispatch(batch.id).executions
    pw.earn(5_000)
    pw.past_hold()
    session, program_id, affiliate_id = pw.world.session, pw.world.program.id, pw.world.affiliate.id

    results = run_together(
        [
            lambda: payouts.mark_paid(pw.rt, session, affiliate_id),
            lambda: payout_executions.report_outcome(
                pw.rt, pw.live_key, ready.id, PayoutExecutionStatus.SUCCEEDED, idempotency_key="race-1"
            ),
            lambda: payouts.prepare_batch(pw.rt, session, program_id),
        ]
    )
    for result in results:
        if isinstance(result, RefcoreError):
            assert result.code == "state_conflict", result

    def read(tx: Tx) -> dict[str, Any]:
        return {
            "items": tx.uow.payout_items.find_all({}),
            "executions": tx.uow.payout_executions.find_all({}),
            "entries": tx.uow.commission_entries.find_all({"program_affiliate_id": affiliate_id}),
        }

    state = pw.rt.read(read)
    active = Counter(i.active_entry_id for i in state["items"] if i.active_entry_id is not None)
    assert all(count == 1 for count in active.values()), "an entry is in at most one payout"

    paid_events = Counter(e.data["id"] for e in pw.events(EventType.COMMISSION_PAID))
    assert all(count == 1 for count in paid_events.values()), "each entry is paid at most once"
    succeeded = [e.data["id"] for e in pw.events(EventType.PAYOUT_SUCCEEDED)]
    assert succeeded.count(ready.id) == 1, "the ready execution succeeded exactly once"

    by_id = {x.id: x for x in state["executions"]}
    assert by_id[ready.id].status is PayoutExecutionStatus.SUCCEEDED
    balance = commissions.payout_balance(pw.rt, session, affiliate_id)
    ever_paid = sum(x.amount for x in state["executions"] if x.status is PayoutExecutionStatus.SUCCEEDED)
    assert balance.paid == ever_paid
    total = sum(e.amount for e in state["entries"])
    assert balance.paid + balance.processing + balance.available + balance.pending + balance.held == total
    assert balance.available in (0, 1000)
