"""PostgreSQL's write batches (refcore_sqlstore.postgres_batches): a member's savepoint leaves
with its first statement and its inserts with its release, a member's lost race is its own, a
row lock is waited for no longer than ``LOCK_TIMEOUT_MS``, other connections write on while a
batch is open, and a batch whose member cannot be undone writes nothing.

What both SQL stores' batches share is in ``tests/sqlstore/test_write_batches.py``."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, InternalError
from refcore.services.runtime import Runtime, Tx
from refcore_sqlstore import SqlStore
from refcore_sqlstore.postgres_batches import held_batch
from tests.sqlstore.raw import count, engine_of, scalar
from tests.sqlstore.test_postgres_round_trips import NOW, _driver, round_trips, sent, traced, user
from tests.stores import emptied_postgres_store, psycopg_connect


@pytest.fixture
def store(one_connection_postgres_store: SqlStore) -> SqlStore:
    return one_connection_postgres_store


def _runtime(store: SqlStore) -> Runtime:
    runtime = store.runtime(clock=ManualClock(NOW))
    runtime.pause = lambda _retry: None
    return runtime


@pytest.fixture
def runtime(store: SqlStore) -> Runtime:
    return _runtime(store)


def _add(runtime: Runtime, number: int) -> None:
    """A write as a payment makes one: read first, then insert."""

    def work(tx: Tx) -> None:
        assert tx.uow.users.get(f"usr_{number}") is None
        tx.uow.users.add(user(number))

    runtime.transaction(work)


def _url(store: SqlStore) -> str:
    return engine_of(store).url.render_as_string(hide_password=False)


def test_a_member_costs_two_round_trips_and_the_batch_one_commit(store: SqlStore, runtime: Runtime) -> None:
    """A member's SAVEPOINT leaves with its read (the first one's with the batch's BEGIN), its
    insert with its RELEASE; the batch's COMMIT is one more round trip."""
    with traced(_driver(store)) as messages, runtime.batch():
        for number in range(3):
            _add(runtime, number)

    assert round_trips(messages) == 2 * 3 + 1
    parsed = [line.split("\t")[3] for line in sent(messages, "Parse")]
    assert sum("BEGIN" in text for text in parsed) == 1
    assert sum("lock_timeout" in text for text in parsed) == 1
    assert sum("RELEASE SAVEPOINT" in text for text in parsed) == 3
    assert sum("COMMIT" in line for line in sent(messages, "Query")) == 1  # psycopg's own
    assert count(store, "users") == 3


def test_members_that_send_nothing_cost_no_round_trip(store: SqlStore, runtime: Runtime) -> None:
    with traced(_driver(store)) as messages, runtime.batch():
        for _ in range(3):
            runtime.transaction(lambda _tx: None)

    assert round_trips(messages) == 0


def test_a_duplicate_key_fails_the_member_that_sent_it_and_the_batch_goes_on(
    store: SqlStore, runtime: Runtime
) -> None:
    """Another connection committed the row first: the member's commit, which carries its
    INSERT, raises the lost race (not retried inside the batch); its neighbours are written."""
    with psycopg_connect(_url(store)) as other:
        other.execute(
            "INSERT INTO users (id, email, created_at) VALUES (%s, %s, %s)",
            ("usr_2", "first@example.com", NOW),
        )

    def blind_add(number: int) -> None:
        runtime.transaction(lambda tx: tx.uow.users.add(user(number)))

    attempts: list[int] = []

    def counted_add(tx: Tx) -> None:
        attempts.append(1)
        tx.uow.users.add(user(2))

    with runtime.batch():
        blind_add(1)
        with pytest.raises(ConcurrentWrite):
            runtime.transaction(counted_add)
        blind_add(3)

    assert attempts == [1]
    assert count(store, "users") == 3
    assert scalar(store, "SELECT email FROM users WHERE id = ?", "usr_2") == "first@example.com"


def test_a_member_waits_for_a_locked_row_no_longer_than_the_lock_timeout(
    store: SqlStore, runtime: Runtime
) -> None:
    """Another transaction holds the row: the member gives up with a lost race instead of
    holding the batch (and its row locks) for as long as that transaction lasts."""
    _add(runtime, 1)
    with psycopg_connect(_url(store)) as other:
        other.execute("BEGIN")
        other.execute("SELECT * FROM users WHERE id = 'usr_1' FOR UPDATE")
        # Without the timeout the member would wait until this ends the other transaction, and
        # then succeed.
        release = threading.Timer(30, lambda: other.execute("ROLLBACK"))
        release.start()
        try:
            with runtime.batch():
                with pytest.raises(ConcurrentWrite):
                    runtime.transaction(
                        lambda tx: tx.uow.users.replace(evolve(user(1), email="changed@example.com"))
                    )
                _add(runtime, 2)
        finally:
            release.cancel()
            other.execute("ROLLBACK")

    assert scalar(store, "SELECT email FROM users WHERE id = ?", "usr_1") == user(1).email
    assert count(store, "users") == 2


def test_other_connections_write_while_a_batch_is_open() -> None:
    """PostgreSQL's backends write concurrently: a batch holds its own rows' locks, not a
    writer turn as SQLite's does."""
    with emptied_postgres_store() as store:
        runtime = _runtime(store)
        with runtime.batch():
            _add(runtime, 1)
            other = threading.Thread(target=_add, args=(runtime, 50))
            other.start()
            other.join(10)
            assert not other.is_alive()
            assert count(store, "users", id="usr_50") == 1  # committed by itself
            assert count(store, "users", id="usr_1") == 0  # the batch's, not yet
        assert count(store, "users") == 2


def test_a_batch_whose_member_cannot_be_undone_writes_nothing(store: SqlStore, runtime: Runtime) -> None:
    """The batch's backend is gone before its second member: that member fails and cannot roll
    back to its savepoint, so the batch is broken and commits nothing (its writes run again)."""
    with pytest.raises(ConcurrentWrite), runtime.batch():
        _add(runtime, 1)
        batch = held_batch(engine_of(store))
        assert batch is not None
        driver = batch.connection.connection.dbapi_connection
        assert isinstance(driver, psycopg.Connection)
        with psycopg_connect(_url(store)) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (driver.info.backend_pid,))
        with pytest.raises(InternalError):
            _add(runtime, 2)

    assert count(store, "users") == 0
    _add(runtime, 3)  # the store writes on afterwards, on a new connection
    assert count(store, "users") == 1


@pytest.fixture(autouse=True)
def _no_leftover_batch(store: SqlStore) -> Iterator[None]:
    yield
    assert held_batch(engine_of(store)) is None
