"""What a unit of work's row lock (``for_update``) holds back on PostgreSQL, and what it lets through.

A service locks a row to change it: the App when its first Live payment fixes its revenue source
or it is renamed, a payment when it is refunded or disputed, an affiliate when it is suspended.
Every foreign key is checked at ``COMMIT`` with a ``FOR KEY SHARE`` lock of the row it names, and
``FOR UPDATE`` refuses that lock. So a transaction that locked the App ``FOR UPDATE`` made every
other write of that App wait at its commit, and when the locker then waited on one of them (for a
balance row both were writing) PostgreSQL broke the cycle after a second with ``deadlock
detected``, four to six times a run of this test suite. The lock is now ``FOR NO KEY UPDATE``,
the lock PostgreSQL's own ``UPDATE`` of a non-key column takes: it still stops another update or
lock of the row until the unit of work ends, and lets rows that merely reference it commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import psycopg
import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Tx
from refcore_sqlstore import SqlStore
from tests.contract.scenario import build_world
from tests.sqlstore.raw import engine_of, scalar
from tests.stores import emptied_postgres_store, psycopg_connect

#: Long enough that only a lock held until the holder gives up can end a wait for it.
LOCK_TIMEOUT = "5s"


@pytest.fixture
def postgres_store() -> Iterator[SqlStore]:
    with emptied_postgres_store() as store:
        yield store


def _while_locked(
    store: SqlStore, app_id: str, other: Callable[[psycopg.Connection[tuple[object, ...]]], None]
) -> None:
    """Run ``other`` on a connection of its own while a unit of work of the store holds the App's
    row lock, taken by the repository's ``for_update``."""
    locked = threading.Event()
    release = threading.Event()
    failures: list[BaseException] = []

    def hold(tx: Tx) -> None:
        assert tx.uow.apps.get(app_id, for_update=True) is not None
        locked.set()
        assert release.wait(30), "the test never released the lock"

    def holder() -> None:
        try:
            store.runtime(clock=ManualClock()).transaction(hold)
        except BaseException as error:  # reported by the test thread
            failures.append(error)
            locked.set()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert locked.wait(30) and not failures, failures
        with psycopg_connect(engine_of(store).url) as connection:
            connection.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
            other(connection)
    finally:
        release.set()
        thread.join()
    assert failures == []


def test_a_locked_row_lets_a_row_that_references_it_commit(postgres_store: SqlStore) -> None:
    app_id = build_world(postgres_store.runtime(clock=ManualClock()), ManualClock()).app.id

    def insert_an_event_of_the_app(connection: psycopg.Connection[tuple[object, ...]]) -> None:
        with connection.transaction():  # the deferred foreign key to apps is checked here
            connection.execute(
                "INSERT INTO events (id, app_id, type, livemode, created_at, data)"
                " VALUES ('evt_lock_test', %s, 'test.locked', true, now(), '{}')",
                (app_id,),
            )

    _while_locked(postgres_store, app_id, insert_an_event_of_the_app)

    assert scalar(postgres_store, "SELECT app_id FROM events WHERE id = 'evt_lock_test'") == app_id


def test_a_locked_row_still_stops_another_update_of_it(postgres_store: SqlStore) -> None:
    app_id = build_world(postgres_store.runtime(clock=ManualClock()), ManualClock()).app.id

    def rename_the_app(connection: psycopg.Connection[tuple[object, ...]]) -> None:
        connection.execute("SET lock_timeout = '200ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            connection.execute("UPDATE apps SET name = 'Renamed' WHERE id = %s", (app_id,))

    _while_locked(postgres_store, app_id, rename_the_app)


def test_a_locked_row_still_stops_another_lock_of_it(postgres_store: SqlStore) -> None:
    app_id = build_world(postgres_store.runtime(clock=ManualClock()), ManualClock()).app.id

    def lock_the_app(connection: psycopg.Connection[tuple[object, ...]]) -> None:
        connection.execute("SET lock_timeout = '200ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable), connection.transaction():
            connection.execute("SELECT 1 FROM apps WHERE id = %s FOR NO KEY UPDATE", (app_id,))

    _while_locked(postgres_store, app_id, lock_the_app)
