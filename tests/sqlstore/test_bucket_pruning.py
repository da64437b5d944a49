"""Pruning the balance projection (``refcore_sqlstore.bucket_pruning``, migration 0006).

The rule: pruning at a moment deletes only rows that no balance read at that moment or later
sums, so every such balance still equals a full scan of the ledger, whatever happened before,
between and after prunings (entries added, disputes opened and closed, payout items made,
toggled and dropped, which bring pruned rows back). Month rows are never pruned; each finer
grain keeps one grain of margin. Batches are short transactions, and on PostgreSQL pruning
skips rows another transaction holds instead of waiting for them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, insert, inspect, select, update

from refcore.models import Mode
from refcore_sqlstore import SqlStore
from refcore_sqlstore.bucket_pruning import prune_balance_buckets, prune_batch, prune_cutoffs
from refcore_sqlstore.tables import affiliate_balance_buckets
from tests.sqlstore.raw import engine_of, rolled_back
from tests.sqlstore.test_balance_buckets import AFFILIATES, BASE, EXAMPLES, PAYMENTS, History, moments, steps
from tests.stores import emptied_postgres_store

b = affiliate_balance_buckets


def prune_in(connection: Connection, now: datetime, *, batch: int = 2) -> int:
    """Everything pruning at ``now`` deletes, in small batches on the caller's transaction."""
    pruned = 0
    for grain, cutoff in prune_cutoffs(now).items():
        while (deleted := prune_batch(connection, grain, cutoff, batch=batch)) > 0:
            pruned += deleted
    return pruned


def bucket_keys(connection: Connection) -> set[tuple[str, str]]:
    return {(row.grain, row.bucket) for row in connection.execute(select(b.c.grain, b.c.bucket))}


@pytest.fixture
def connection(sql_store: SqlStore) -> Iterator[Connection]:
    with engine_of(sql_store).connect() as connection:
        yield connection


def test_the_cutoffs_keep_one_grain_before_what_a_read_sums() -> None:
    """A read at ``now`` sums days from the first of the month, hours from midnight, minutes from
    the start of the hour (``ledger.py``); pruning keeps one more of each."""
    now = datetime(2026, 3, 1, 0, 10, 30, tzinfo=UTC)
    assert prune_cutoffs(now) == {
        "minute": "2026-02-28 23:00",
        "hour": "2026-02-28 00",
        "day": "2026-02-01",
    }
    assert prune_cutoffs(datetime(2026, 1, 15, 9, 0, tzinfo=UTC)) == {
        "minute": "2026-01-15 08:00",
        "hour": "2026-01-14 00",
        "day": "2025-12-01",
    }


def test_pruning_deletes_only_past_day_hour_and_minute_rows(connection: Connection) -> None:
    now = BASE + timedelta(days=40, hours=5, minutes=30)  # 2026-02-10 05:30
    moments_made = [
        BASE - timedelta(days=20),  # December: its day row goes, its month row stays
        BASE + timedelta(days=2),  # last month: its day row stays, its hour row goes
        now - timedelta(days=1, hours=4),  # yesterday 01:30: hour kept, minute goes
        now - timedelta(minutes=70),  # 04:20: minute kept (previous hour)
        now - timedelta(minutes=90),  # 04:00: the first minute kept
        now - timedelta(minutes=91),  # 03:59: pruned
        now + timedelta(days=30),  # on hold until March: everything kept
    ]
    with rolled_back(connection):
        world = History(connection)
        for n, at in enumerate(moments_made):
            world.entry("pa_one", "txn_a", 100 + n, at, Mode.LIVE)
        before = bucket_keys(connection)
        assert prune_in(connection, now) > 0
        after = bucket_keys(connection)
        assert {key for key in before if key[0] == "month"} <= after
        assert ("day", "2025-12-12") not in after and ("hour", "2025-12-12 00") not in after
        assert ("day", "2026-01-03") in after and ("hour", "2026-01-03 00") not in after
        assert ("hour", "2026-02-09 01") in after and ("minute", "2026-02-09 01:30") not in after
        assert ("minute", "2026-02-10 04:20") in after and ("minute", "2026-02-10 04:00") in after
        assert ("minute", "2026-02-10 03:59") not in after and ("hour", "2026-02-10 03") in after
        assert {("day", "2026-03-12"), ("hour", "2026-03-12 05"), ("minute", "2026-03-12 05:30")} <= after
        cutoffs = prune_cutoffs(now)
        assert all(bucket >= cutoffs[grain] for grain, bucket in after if grain != "month")
        assert prune_in(connection, now) == 0  # nothing left to prune at that moment


#: How long after an entry's ``available_at`` a pruning or a check may come: the same instant,
#: within its minute, the next minutes and hours, the next day, the next months.
LATER = tuple(
    timedelta(**step)
    for step in (
        {"seconds": 0},
        {"seconds": 30},
        {"minutes": 1},
        {"minutes": 59},
        {"minutes": 61},
        {"hours": 25},
        {"days": 32},
    )
)
#: A pruning at a generated moment, or at a while after one of the entries' ``available_at``
#: (where a too eager cutoff would cut the rows a read sums).
prunings = st.tuples(
    st.just("prune"),
    st.one_of(moments, st.tuples(st.integers(min_value=0, max_value=30), st.sampled_from(LATER))),
)


entries = st.tuples(
    st.just("entry"),
    st.sampled_from(AFFILIATES),
    st.sampled_from(PAYMENTS),
    st.integers(min_value=-5_000, max_value=5_000),
    moments,
    st.sampled_from((Mode.LIVE, Mode.TEST)),
)
#: Chunks of steps: single entries and prunings as often as whole generated histories, so that
#: a pruning often follows an entry closely.
histories = st.lists(
    st.one_of(entries.map(lambda step: [step]), prunings.map(lambda step: [step]), steps), max_size=10
)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, final=moments)
def test_balances_read_after_a_pruning_equal_a_full_scan_whatever_the_history(
    connection: Connection, history: list[Any], final: datetime
) -> None:
    """Decisions 4, 5 still hold on a pruned projection: any history, prunings anywhere in it
    (later changes bring pruned rows back), then every balance at or after the last pruning
    (at it, at each entry's own ``available_at``, and a while after each) equals the full scan."""
    with rolled_back(connection):
        world = History(connection)
        last_pruning: datetime | None = None
        for chunk in history:
            for name, *arguments in chunk:
                if name == "prune":
                    choice = arguments[0]
                    if isinstance(choice, tuple):
                        index, later = choice
                        choice = world.moment(index) + later
                    prune_in(connection, choice)
                    last_pruning = max(choice, last_pruning or choice)
                elif name != "check":
                    getattr(world, name)(*arguments)
        floor = last_pruning or BASE - timedelta(days=400)
        world.check(max(final, floor))
        for moment in (floor, *(at + later for _entry, at in world.entries for later in LATER[:5])):
            if moment >= floor:
                world.check(moment)


def _bucket_row(grain: str, bucket: str, affiliate: str = "pa_one") -> dict[str, Any]:
    return {
        "program_affiliate_id": affiliate,
        "mode": "live",
        "grain": grain,
        "bucket": bucket,
        "open_amount": 1,
        "held_amount": 0,
    }


def _past_minutes(count: int, affiliate: str = "pa_one") -> list[dict[str, Any]]:
    return [_bucket_row("minute", f"2026-01-01 00:{n:02d}", affiliate) for n in range(count)]


def test_the_store_prunes_in_batches_until_nothing_is_left(sql_store: SqlStore) -> None:
    """Committed rows, pruned by the store's own transactions, several batches a grain."""
    engine = engine_of(sql_store)
    kept = [_bucket_row("month", "2026-01"), _bucket_row("minute", "2026-02-10 04:59")]
    with engine.begin() as connection:
        connection.execute(insert(b), _past_minutes(7) + _past_minutes(5, "pa_two") + kept)
        connection.execute(
            insert(b), [_bucket_row("hour", "2026-01-01 00"), _bucket_row("day", "2025-12-31")]
        )
    now = datetime(2026, 2, 10, 5, 30, tzinfo=UTC)
    assert prune_balance_buckets(engine, now, batch=3) == 14
    with engine.connect() as connection:
        assert bucket_keys(connection) == {("month", "2026-01"), ("minute", "2026-02-10 04:59")}
    assert sql_store.prune_balance_buckets(now) == 0
    with pytest.raises(ValueError):
        prune_balance_buckets(engine, now, batch=0)


def test_migration_0006_indexes_the_projection_by_grain_and_bucket(sql_store: SqlStore) -> None:
    """What lets a batch find its rows without reading the whole table."""
    indexes = inspect(engine_of(sql_store)).get_indexes("affiliate_balance_buckets")
    assert ["grain", "bucket"] in [index["column_names"] for index in indexes]


@pytest.fixture
def postgres_store() -> Iterator[SqlStore]:
    """PostgreSQL only: SQLite has one writer at a time, so no other transaction holds a row."""
    with emptied_postgres_store() as store:
        yield store


def test_pruning_on_postgresql_skips_rows_another_transaction_holds(postgres_store: SqlStore) -> None:
    """A batch never waits for a row lock (so pruning never joins a deadlock); the row it skipped
    goes at the next pruning."""
    engine = engine_of(postgres_store)
    with engine.begin() as connection:
        connection.execute(insert(b), _past_minutes(4))
    now = datetime(2026, 2, 10, 5, 30, tzinfo=UTC)
    held = threading.Event()
    release = threading.Event()

    def hold_one_row() -> None:
        with engine.begin() as holder:
            holder.execute(
                update(b).where(b.c.bucket == "2026-01-01 00:02").values(open_amount=b.c.open_amount + 1)
            )
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold_one_row)
    holder.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        assert prune_balance_buckets(engine, now) == 3
        assert time.monotonic() - started < 5  # it did not wait for the holder's commit
    finally:
        release.set()
        holder.join()
    assert prune_balance_buckets(engine, now) == 1
    with engine.connect() as connection:
        assert bucket_keys(connection) == set()
