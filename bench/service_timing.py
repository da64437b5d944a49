"""Timing the ledger reads in-process, one caller, no HTTP: the service functions themselves.

This isolates what the database and the core cost per read from queueing at 32 connections,
and it measures the payout balance even while the server has no HTTP route for it yet.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from refcore.services.commissions import list_commissions
from refcore.services.payout_accounts import get_payout_balance
from refcore.services.payouts import list_ready_payouts
from refcore.services.principal import Scope
from refcore.services.tenancy import authenticate
from refcore_http.store import open_store


def _time(work: Callable[[], object], *, seconds: float, at_most: int = 2000) -> dict[str, float]:
    """Timings of ``work`` after one warm-up call, for about ``seconds`` (at least one call)."""
    start = time.perf_counter()
    work()  # warm caches and the connection pool
    warm = time.perf_counter() - start
    timings: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(timings) < at_most and (time.perf_counter() < deadline or not timings):
        if warm > 4 * seconds and timings:
            break
        start = time.perf_counter()
        work()
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    return {
        "calls": len(timings),
        "p50_ms": statistics.median(timings),
        "p99_ms": timings[min(len(timings) - 1, int(len(timings) * 0.99))],
    }


def time_reads(
    database_url: str, *, app_key: str, program_id: str, affiliate_keys: dict[str, str], seconds: float
) -> dict[str, dict[str, Any]]:
    """``commissions_page``, ``ready_payouts`` (the program's page of 25, with the App key) and one
    balance read per entry of ``affiliate_keys`` (name -> key)."""
    store = open_store(database_url)
    try:
        rt = store.runtime
        app = authenticate(rt, app_key)
        assert app.app_id is not None and app.mode is not None
        scope = Scope(app_id=app.app_id, mode=app.mode)
        timings = {
            "commissions_page": _time(lambda: list_commissions(rt, scope, {}, limit=25), seconds=seconds),
            "ready_payouts": _time(
                lambda: list_ready_payouts(rt, app, program_id, limit=25), seconds=seconds
            ),
        }
        for name, key in affiliate_keys.items():
            affiliate = authenticate(rt, key)
            timings[name] = _time(partial(get_payout_balance, rt, affiliate, program_id), seconds=seconds)
        return timings
    finally:
        store.dispose()
