"""SQLite's read units of work run on connections the store keeps between reads
(``refcore_sqlstore.read_connections``): reused, never carrying a transaction or a stale
snapshot from one read to the next, bounded in number, and given back to the pool on dispose."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime

import pytest

from refcore.models import User
from refcore_sqlstore import SqlStore
from refcore_sqlstore.read_connections import KEEP_IDLE, ReadConnections, idle_readers_for
from tests.sqlstore.raw import engine_of
from tests.stores import fresh_sqlite_store

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store() -> Iterator[SqlStore]:
    with fresh_sqlite_store() as store:
        yield store


def _readers(store: SqlStore) -> ReadConnections:
    readers: ReadConnections = store._readers
    return readers


def _add_user(store: SqlStore, number: int) -> None:
    with store.unit_of_work() as uow:
        uow.users.add(User(id=f"usr_{number}", email=f"u{number}@example.com", created_at=NOW))
        uow.commit()


def test_a_read_gives_its_connection_back_without_a_transaction_and_the_next_read_reuses_it(
    store: SqlStore,
) -> None:
    with store.read_unit_of_work() as uow:
        uow.users.get("usr_none")
        first = uow._require_connection().connection.dbapi_connection
        assert first is not None and first.in_transaction  # type: ignore[attr-defined]
    assert not first.in_transaction  # type: ignore[attr-defined]
    assert _readers(store).idle == 1
    with store.read_unit_of_work() as uow:
        assert uow._require_connection().connection.dbapi_connection is first


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
    assert _readers(store).idle == 1
    _add_user(store, 2)  # would wait for the busy timeout behind a transaction left open
    with store.read_unit_of_work() as uow:
        assert uow.users.get("usr_2") is not None


def test_at_most_keep_idle_connections_are_kept_and_the_rest_go_back_to_the_pool(store: SqlStore) -> None:
    pool = engine_of(store).pool
    before = pool.checkedout()  # type: ignore[attr-defined]
    with ExitStack() as reads:
        for _ in range(KEEP_IDLE + 3):
            reads.enter_context(store.read_unit_of_work()).users.get("usr_none")
        assert pool.checkedout() == before + KEEP_IDLE + 3  # type: ignore[attr-defined]
    assert _readers(store).idle == KEEP_IDLE
    assert pool.checkedout() == before + KEEP_IDLE  # type: ignore[attr-defined]


def test_an_invalidated_connection_is_not_kept(store: SqlStore) -> None:
    with store.read_unit_of_work() as uow:
        uow._require_connection().invalidate()
    assert _readers(store).idle == 0


def test_dispose_gives_every_kept_connection_back_to_the_pool(store: SqlStore) -> None:
    with store.read_unit_of_work() as uow:
        uow.users.get("usr_none")
    assert _readers(store).idle == 1
    store.dispose()
    assert _readers(store).idle == 0
    assert engine_of(store).pool.checkedout() == 0  # type: ignore[attr-defined]


def test_a_small_pool_keeps_a_connection_free_for_the_writer_however_many_reads_ran_at_once(
    store: SqlStore,
) -> None:
    small = SqlStore(engine_of(store).url.render_as_string(hide_password=False), pool_size=3, max_overflow=0)
    try:
        with ExitStack() as reads:
            for _ in range(3):
                reads.enter_context(small.read_unit_of_work()).users.get("usr_none")
        assert _readers(small).idle == idle_readers_for(3) == 1
        _add_user(small, 3)  # would wait for the pool's 30 s timeout if every connection were kept
        with small.read_unit_of_work() as uow:
            assert uow.users.get("usr_3") is not None
    finally:
        small.dispose()


@pytest.mark.parametrize(("pool_size", "kept"), [(1, 0), (2, 0), (3, 1), (10, KEEP_IDLE), (50, KEEP_IDLE)])
def test_the_idle_readers_kept_leave_two_connections_of_the_pool_free(pool_size: int, kept: int) -> None:
    assert idle_readers_for(pool_size) == kept
