"""Units of work run on connections the store keeps checked out between them
(``refcore_sqlstore.kept_connections``): SQLite's reads, and every unit of work on PostgreSQL.
A kept connection is reused, never carries a transaction, a row lock, an unsent write or a stale
snapshot from one unit of work to the next, is replaced when the server closed it, is bounded
in number, and goes back to the pool on dispose."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import Connection, event

from refcore.models import User
from refcore.ports.unit_of_work import UnitOfWork
from refcore_sqlstore import SqlStore
from refcore_sqlstore.kept_connections import KEEP_IDLE, KeptConnections, idle_connections_for
from tests.sqlstore.conftest import open_sql_store
from tests.sqlstore.raw import count, engine_of, terminate_backend
from tests.stores import psycopg_connect

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(sql_store: SqlStore) -> SqlStore:
    return sql_store


@pytest.fixture
def postgres_store() -> Iterator[SqlStore]:
    with open_sql_store("postgres") as store:
        yield store


def _kept(store: SqlStore) -> KeptConnections:
    kept: KeptConnections = store._kept
    return kept


def _connection(uow: UnitOfWork) -> Connection:
    connection: Connection = uow._require_connection()  # type: ignore[attr-defined]
    return connection


def _driver(uow: UnitOfWork) -> Any:
    return _connection(uow).connection.dbapi_connection


def _in_transaction(driver: Any) -> bool:
    if isinstance(driver, psycopg.Connection):
        return driver.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
    return bool(driver.in_transaction)


def _user(number: int) -> User:
    return User(id=f"usr_{number}", email=f"u{number}@example.com", created_at=NOW)


def _add_user(store: SqlStore, number: int) -> None:
    with store.unit_of_work() as uow:
        uow.users.add(_user(number))
        uow.commit()


def _checkouts(store: SqlStore) -> list[object]:
    """Every checkout from the store's pool from now on."""
    checkouts: list[object] = []
    event.listen(engine_of(store).pool, "checkout", lambda *args: checkouts.append(args))
    return checkouts


# -- on both stores ---------------------------------------------------------------------------------


def test_a_read_gives_its_connection_back_without_a_transaction_and_the_next_read_reuses_it(
    store: SqlStore,
) -> None:
    with store.read_unit_of_work() as uow:
        uow.users.get("usr_none")
        first = _driver(uow)
    assert not _in_transaction(first)
    assert _kept(store).idle == 1
    checkouts = _checkouts(store)
    with store.read_unit_of_work() as uow:
        assert _driver(uow) is first
    assert checkouts == []


def test_a_kept_connection_sees_what_was_committed_since_its_last_read(store: SqlStore) -> None:
    with store.read_unit_of_work() as uow:
        assert uow.users.get("usr_1") is None
    _add_user(store, 1)
    with store.read_unit_of_work() as uow:
        assert uow.users.get("usr_1") is not None


def test_a_failed_read_still_gives_back_a_connection_with_its_transaction_ended(store: SqlStore) -> None:
    with pytest.raises(LookupError), store.read_unit_of_work() as uow:
        uow.users.get("usr_none")
        raise LookupError("the work failed")
    assert _kept(store).idle == 1
    _add_user(store, 2)  # on SQLite, would wait for the busy timeout behind a transaction left open
    with store.read_unit_of_work() as uow:
        assert uow.users.get("usr_2") is not None


def test_at_most_keep_idle_connections_are_kept_and_the_rest_go_back_to_the_pool(store: SqlStore) -> None:
    pool = engine_of(store).pool
    before = pool.checkedout()  # type: ignore[attr-defined]
    with ExitStack() as reads:
        for _ in range(KEEP_IDLE + 3):
            reads.enter_context(store.read_unit_of_work()).users.get("usr_none")
        assert pool.checkedout() == before + KEEP_IDLE + 3  # type: ignore[attr-defined]
    assert _kept(store).idle == KEEP_IDLE
    assert pool.checkedout() == before + KEEP_IDLE  # type: ignore[attr-defined]


def test_an_invalidated_connection_is_not_kept(store: SqlStore) -> None:
    with store.read_unit_of_work() as uow:
        _connection(uow).invalidate()
    assert _kept(store).idle == 0


def test_dispose_gives_every_kept_connection_back_to_the_pool(store: SqlStore) -> None:
    with store.read_unit_of_work() as uow:
        uow.users.get("usr_none")
    assert _kept(store).idle == 1
    store.dispose()
    assert _kept(store).idle == 0
    assert engine_of(store).pool.checkedout() == 0  # type: ignore[attr-defined]


def test_a_small_pool_keeps_a_connection_free_for_a_writer_however_many_reads_ran_at_once(
    store: SqlStore,
) -> None:
    """Two connections stay free: on SQLite for the group commit's writer, on PostgreSQL for
    the webhook outbox's and the pruning's transactions, which take theirs from the pool."""
    small = SqlStore(engine_of(store).url.render_as_string(hide_password=False), pool_size=3, max_overflow=0)
    try:
        with ExitStack() as reads:
            for _ in range(3):
                reads.enter_context(small.read_unit_of_work()).users.get("usr_none")
        assert _kept(small).idle == idle_connections_for(3) == 1
        _add_user(small, 3)  # would wait for the pool's 30 s timeout if every connection were kept
        with small.read_unit_of_work() as uow:
            assert uow.users.get("usr_3") is not None
    finally:
        small.dispose()


@pytest.mark.parametrize(("pool_size", "kept"), [(1, 0), (2, 0), (3, 1), (10, KEEP_IDLE), (50, KEEP_IDLE)])
def test_the_idle_connections_kept_leave_two_connections_of_the_pool_free(pool_size: int, kept: int) -> None:
    assert idle_connections_for(pool_size) == kept


# -- PostgreSQL: writes too, and the checks the pool made at checkout and checkin -------------------


def test_postgresql_writes_and_reads_share_the_kept_connections_without_a_checkout(
    postgres_store: SqlStore,
) -> None:
    _add_user(postgres_store, 1)
    assert _kept(postgres_store).idle == 1
    checkouts = _checkouts(postgres_store)
    with postgres_store.unit_of_work() as uow:
        first = _driver(uow)
        uow.users.add(_user(2))
        uow.commit()
    with postgres_store.read_unit_of_work() as uow:
        assert _driver(uow) is first
        assert uow.users.get("usr_2") is not None
    assert checkouts == []
    assert _kept(postgres_store).idle == 1


def test_a_postgresql_write_left_unfinished_leaves_no_write_lock_or_transaction_behind(
    postgres_store: SqlStore,
) -> None:
    """An unsent insert and a row lock of a unit of work that failed end with it: the connection
    is kept, the next unit of work on it writes nothing of the failed one's, and another
    connection can lock the row at once."""
    _add_user(postgres_store, 1)
    with pytest.raises(LookupError), postgres_store.unit_of_work() as uow:
        assert uow.users.get("usr_1", for_update=True) is not None  # BEGIN sent: a lock held
        uow.users.add(_user(2))  # deferred: waits for the next statement or the COMMIT
        raise LookupError("the work failed")
    assert _kept(postgres_store).idle == 1

    with postgres_store.unit_of_work() as uow:
        uow.users.add(_user(3))
        uow.commit()
    assert count(postgres_store, "users") == 2
    assert count(postgres_store, "users", id="usr_2") == 0
    url = engine_of(postgres_store).url.render_as_string(hide_password=False)
    with psycopg_connect(url) as other:
        other.execute("SET lock_timeout = '2s'")
        other.execute("SELECT id FROM users WHERE id = 'usr_1' FOR UPDATE NOWAIT")


def test_a_postgresql_connection_given_back_inside_a_transaction_is_not_kept_and_the_pool_ends_it(
    postgres_store: SqlStore,
) -> None:
    """Nothing of refcore leaves one so, but a transaction the unit of work did not know of
    (begun on the driver itself after its commit) must not stay open on an idle connection."""
    with postgres_store.unit_of_work() as uow:
        uow.users.add(_user(1))
        uow.commit()
        driver = _driver(uow)
        driver.execute("BEGIN")
        driver.execute("SELECT id FROM users FOR UPDATE")
        assert _in_transaction(driver)
    assert _kept(postgres_store).idle == 0
    assert not _in_transaction(driver)  # rolled back by the pool's checkin


def test_a_kept_postgresql_connection_the_server_closed_is_replaced_when_taken(
    postgres_store: SqlStore,
) -> None:
    with postgres_store.read_unit_of_work() as uow:
        driver = _driver(uow)
    assert _kept(postgres_store).idle == 1
    terminate_backend(postgres_store, driver)

    with postgres_store.unit_of_work() as uow:  # no error: a new connection
        assert _driver(uow) is not driver
        uow.users.add(_user(1))
        uow.commit()
    assert count(postgres_store, "users") == 1
    assert _kept(postgres_store).idle == 1
