"""Pruning rate-limit counters whose window has ended (``refcore_sqlstore.rate_limit_pruning``).

A limit's window is at most a day (``rate_limits.LONGEST_WINDOW``), so a counter whose window
began more than a day and an hour ago is never read again: the server's pruning deletes it, and
a limit whose window is still open keeps counting where it was.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from refcore.clocks import ManualClock
from refcore.errors import RateLimited
from refcore.services import rate_limits
from refcore.services.runtime import Runtime, Tx
from refcore_sqlstore import SqlStore
from refcore_sqlstore.rate_limit_pruning import prune_rate_limit_counters
from refcore_sqlstore.tables import rate_limit_counters
from tests.sqlstore.raw import engine_of

NOW = datetime(2026, 2, 10, 5, 30, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _counter(n: int, window_start: datetime) -> dict[str, object]:
    return {
        "id": f"rlc_{n}",
        "key": f"join:ip:{n}",
        "window_start": window_start,
        "count": 3,
        "created_at": window_start,
    }


def _keys(store: SqlStore) -> set[str]:
    with engine_of(store).connect() as connection:
        return set(connection.execute(select(rate_limit_counters.c.key)).scalars())


def test_counters_of_windows_that_began_over_a_day_and_an_hour_ago_are_deleted(sql_store: SqlStore) -> None:
    cutoff = rate_limits.forgettable_before(NOW)
    assert cutoff == NOW - timedelta(days=1, hours=1)
    starts = [NOW - timedelta(days=30), cutoff - timedelta(seconds=1), cutoff, NOW - HOUR, NOW]
    with engine_of(sql_store).begin() as connection:
        connection.execute(insert(rate_limit_counters), [_counter(n, at) for n, at in enumerate(starts)])
    assert prune_rate_limit_counters(engine_of(sql_store), NOW, batch=1) == 2
    assert _keys(sql_store) == {"join:ip:2", "join:ip:3", "join:ip:4"}
    assert sql_store.prune(NOW) == 0


def test_a_limit_whose_window_is_open_keeps_its_count_after_a_pruning(sql_store: SqlStore) -> None:
    """Five uses an hour: two, a pruning, three more, and the sixth is refused; two days on,
    the old window's counter is pruned and a new window starts."""
    clock = ManualClock(NOW)
    runtime: Runtime = sql_store.runtime(clock=clock)

    def use() -> None:
        def work(tx: Tx) -> None:
            rate_limits.take(tx, "join:email:x", limit=5, window=HOUR)

        runtime.transaction(work)

    use()
    use()
    clock.advance(timedelta(minutes=20))
    assert sql_store.prune(clock.now()) == 0
    for _ in range(3):
        use()
    with pytest.raises(RateLimited):
        use()
    clock.advance(timedelta(days=2))
    assert sql_store.prune(clock.now()) == 1  # that hour's counter, long over
    use()  # a new window
