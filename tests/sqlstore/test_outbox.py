"""The SQL outbox: every committed event is claimed once, also by racing dispatchers."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import orjson
import pytest
from sqlalchemy import make_url

from refcore.clocks import ManualClock
from refcore.models import Event, EventType
from refcore.services.runtime import Tx
from refcore_sqlstore import SqlStore
from tests.contract.scenario import build_world
from tests.sqlstore import raw
from tests.sqlstore.raw import engine_of
from tests.stores import fresh_postgres_database, psycopg_connect

LEASE = 60.0


def _emit_events(store: SqlStore, clock: ManualClock, number: int) -> list[str]:
    rt = store.runtime(clock=clock)
    world = build_world(rt, clock)
    before = {e.id for e in world.events()}

    def emit(tx: Tx) -> Event:
        return tx.emit(EventType.WEBHOOK_TEST, app_id=world.app.id, livemode=False, data={"id": "t"})

    emitted = [rt.transaction(emit).id for _ in range(number)]
    assert not before & set(emitted)
    return sorted(before) + emitted


def test_claims_oldest_first_and_marks_the_claim(sql_store: SqlStore) -> None:
    clock = ManualClock()
    ids = _emit_events(sql_store, clock, 3)
    claimed = sql_store.outbox.claim(now=clock.now(), limit=2, lease_seconds=LEASE)
    assert [e.id for e in claimed] == sorted(ids)[:2]
    assert all(e.claimed_at == clock.now() for e in claimed)
    rest = sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)
    assert [e.id for e in rest] == sorted(ids)[2:]
    assert sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE) == []


def test_an_unfinished_claim_is_taken_again_after_the_lease_a_delivered_event_never(
    sql_store: SqlStore,
) -> None:
    clock = ManualClock()
    ids = _emit_events(sql_store, clock, 2)
    first = sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)
    assert [e.id for e in first] == sorted(ids)
    sql_store.outbox.mark_delivered(first[0].id, now=clock.now())
    clock.advance(timedelta(seconds=LEASE - 1))
    assert sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE) == []
    clock.advance(timedelta(seconds=1))
    again = sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)
    assert [e.id for e in again] == sorted(ids)[1:]


def test_racing_dispatchers_claim_each_event_exactly_once(sql_store: SqlStore) -> None:
    clock = ManualClock()
    ids = _emit_events(sql_store, clock, 60)
    claims: Counter[str] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def dispatcher() -> None:
        try:
            for _ in range(200):  # bounded: 60-odd events in batches of 3
                batch = sql_store.outbox.claim(now=clock.now(), limit=3, lease_seconds=LEASE)
                if not batch:
                    return
                with lock:
                    claims.update(e.id for e in batch)
                for event in batch:
                    sql_store.outbox.mark_delivered(event.id, now=clock.now())
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=dispatcher) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(claims) == sorted(ids)
    assert set(claims.values()) == {1}


def test_closing_quiet_events_in_one_statement_keeps_an_earlier_close(sql_store: SqlStore) -> None:
    """The dispatcher closes the events no endpoint wants with one ``UPDATE``: they are never
    claimed again, an event already closed keeps its time, and the others stay claimable."""
    clock = ManualClock()
    ids = sorted(_emit_events(sql_store, clock, 3))
    sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)
    closed_first = clock.now()
    sql_store.outbox.mark_delivered(ids[0], now=closed_first)
    clock.advance(timedelta(seconds=5))
    sql_store.outbox.mark_all_delivered([ids[0], ids[1], ids[1]], now=clock.now())
    sql_store.outbox.mark_all_delivered([], now=clock.now())
    delivered = {
        e.id: e.delivered_at
        for e in sql_store.runtime(clock=clock).read(lambda tx: tx.uow.events.find_all({}))
    }
    assert delivered[ids[0]] == closed_first
    assert delivered[ids[1]] == clock.now()
    assert all(delivered[i] is None for i in ids[2:])
    clock.advance(timedelta(seconds=LEASE))
    again = sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)
    assert [e.id for e in again] == ids[2:]


def test_an_events_payload_is_stored_as_compact_utf_8_json_and_read_back_equal(sql_store: SqlStore) -> None:
    """``JSON`` columns are written and read by orjson (``refcore_sqlstore.engine``): the stored
    text is the payload's compact JSON, non-ASCII kept as UTF-8, and reading it gives the payload
    back, value for value."""
    clock = ManualClock()
    rt = sql_store.runtime(clock=clock)
    world = build_world(rt, clock)
    data = {
        "id": "t",
        "name": "Zoë — ünïcode ✓",
        "amount": 2**31,
        "nested": {"list": [1, None, True, "x"], "empty": {}},
    }

    def emit(tx: Tx) -> Event:
        return tx.emit(EventType.WEBHOOK_TEST, app_id=world.app.id, livemode=False, data=data)

    event_id = rt.transaction(emit).id
    stored = raw.scalar(sql_store, "SELECT CAST(data AS TEXT) FROM events WHERE id = ?", event_id)
    if engine_of(sql_store).dialect.name == "sqlite":
        assert stored == orjson.dumps(data).decode("utf-8")
    assert json.loads(stored) == data
    claimed = sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)
    assert next(e for e in claimed if e.id == event_id).data == data


#: Planner settings under which PostgreSQL 15 runs a semi join as a nested loop with the
#: subquery on its inner side, rescanned for every outer row, as it chose on its own for a table
#: its statistics called nearly empty.
_NESTED_LOOP_PLAN = (
    "enable_hashjoin",
    "enable_mergejoin",
    "enable_hashagg",
    "enable_material",
    "enable_sort",
)


@pytest.fixture
def nested_loop_store() -> Iterator[SqlStore]:
    """A migrated PostgreSQL database of its own whose sessions plan with :data:`_NESTED_LOOP_PLAN` off."""
    with fresh_postgres_database() as url:
        driver_url = make_url(url).set(drivername="postgresql")
        with psycopg_connect(driver_url.render_as_string(hide_password=False)) as admin:
            for setting in _NESTED_LOOP_PLAN:
                admin.execute(f'ALTER DATABASE "{driver_url.database}" SET {setting} = off')
        store = SqlStore(url)
        try:
            store.migrate()
            yield store
        finally:
            store.dispose()


def test_a_claim_takes_no_more_than_its_limit_whatever_the_plan(nested_loop_store: SqlStore) -> None:
    """A dispatcher holds at most its limit of claimed events, each to be delivered within its
    lease. ``id IN (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)`` planned as a nested loop ran the
    limited subquery again for every row, and ``claim(limit=2)`` took all six events (found by
    the helper that built ``GET /v1/events``, after an ``ANALYZE`` of a nearly empty table)."""
    clock = ManualClock()
    ids = _emit_events(nested_loop_store, clock, 5)
    claimed = nested_loop_store.outbox.claim(now=clock.now(), limit=2, lease_seconds=LEASE)
    assert [e.id for e in claimed] == sorted(ids)[:2]
    left = nested_loop_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)
    assert [e.id for e in left] == sorted(ids)[2:]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_claim_limit_below_one_is_refused_and_claims_nothing(sql_store: SqlStore, limit: int) -> None:
    """SQLite had read ``LIMIT -1`` as no limit and PostgreSQL refused it with a database error;
    every store now refuses the call the same way (the memory outbox has the same test)."""
    clock = ManualClock()
    emitted = _emit_events(sql_store, clock, 2)
    with pytest.raises(ValueError, match="at least 1"):
        sql_store.outbox.claim(now=clock.now(), limit=limit, lease_seconds=LEASE)
    assert [e.id for e in sql_store.outbox.claim(now=clock.now(), limit=100, lease_seconds=LEASE)] == emitted
