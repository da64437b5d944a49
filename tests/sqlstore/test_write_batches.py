"""SQLite write batches (``GroupCommit.batch``, ``Runtime.write_batch``): one thread runs several
writes as members of one group, each with its own savepoint, and the group is committed once,
when the block ends; nothing of it is visible to other connections, or committed, before."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator

import pytest

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, InternalError, ValidationError
from refcore.models import Session
from refcore.services.runtime import Runtime, Tx
from refcore_memstore import memory_runtime
from refcore_sqlstore import SqlStore
from refcore_sqlstore import group_commit as group_commit_module
from tests.sqlstore.raw import count
from tests.sqlstore.test_group_commit import NOW, _commits, _turns, _user, _wait_until, _write_user
from tests.stores import emptied_postgres_store, fresh_sqlite_store


@pytest.fixture
def store() -> Iterator[SqlStore]:
    with fresh_sqlite_store() as sqlite:
        yield sqlite


@pytest.fixture
def runtime(store: SqlStore) -> Runtime:
    return store.runtime(clock=ManualClock(NOW))


def _add_user(runtime: Runtime, number: int) -> str:
    def work(tx: Tx) -> str:
        tx.uow.users.add(_user(number))
        return _user(number).id

    return runtime.transaction(work)


def test_a_batchs_writes_are_committed_together_when_it_ends_and_not_before(
    store: SqlStore, runtime: Runtime
) -> None:
    commits = _commits(store)
    assert runtime.write_batch is not None
    with runtime.write_batch():
        for number in range(5):
            assert _add_user(runtime, number) == _user(number).id
        # Each transaction returned, but the batch holds them: no other connection sees them.
        assert count(store, "users") == 0
        assert commits == []
    assert count(store, "users") == 5
    assert len(commits) == 1


def test_a_write_that_fails_in_a_batch_rolls_back_its_own_writes_only(
    store: SqlStore, runtime: Runtime
) -> None:
    def half_written(tx: Tx) -> None:
        tx.uow.users.add(_user(99))
        raise ValidationError("refused after writing", param="email")

    assert runtime.write_batch is not None
    with runtime.write_batch():
        _add_user(runtime, 1)
        with pytest.raises(ValidationError):
            runtime.transaction(half_written)
        _add_user(runtime, 2)
    assert count(store, "users") == 2
    assert count(store, "users", id=_user(99).id) == 0


def test_a_batch_refused_at_commit_writes_nothing_and_says_to_run_again(
    store: SqlStore, runtime: Runtime
) -> None:
    """A deferred foreign key broken by one write fails the batch's COMMIT: nothing of the batch
    is written, and the block raises ``ConcurrentWrite`` so its writes run again, each alone."""

    def dangling_session(tx: Tx) -> None:
        tx.uow.sessions.add(Session(id="ses_1", user_id="usr_nobody", token_digest="d", created_at=NOW))

    assert runtime.write_batch is not None
    with pytest.raises(ConcurrentWrite), runtime.write_batch():
        _add_user(runtime, 1)
        runtime.transaction(dangling_session)
        _add_user(runtime, 2)
    assert count(store, "users") == 0
    assert count(store, "sessions") == 0
    assert _add_user(runtime, 1) == _user(1).id  # the store writes on afterwards
    assert count(store, "users") == 1


def test_a_batch_of_one_refused_at_commit_raises_the_writes_own_error(runtime: Runtime) -> None:
    def dangling_session(tx: Tx) -> None:
        tx.uow.sessions.add(Session(id="ses_1", user_id="usr_nobody", token_digest="d", created_at=NOW))

    assert runtime.write_batch is not None
    with pytest.raises(InternalError), runtime.write_batch():
        runtime.transaction(dangling_session)


def test_a_batch_left_by_an_exception_commits_nothing(store: SqlStore, runtime: Runtime) -> None:
    assert runtime.write_batch is not None
    with pytest.raises(LookupError), runtime.write_batch():
        _add_user(runtime, 1)
        raise LookupError("the batch's runner failed")
    assert count(store, "users") == 0
    assert _write_user(store, 2) == 1  # and the turn is free again


def test_a_second_batch_in_the_same_thread_fails_at_once(store: SqlStore, runtime: Runtime) -> None:
    assert runtime.write_batch is not None
    with runtime.write_batch():
        _add_user(runtime, 1)
        with pytest.raises(InternalError), runtime.write_batch():
            pass
    assert count(store, "users") == 1


def test_other_threads_writers_wait_for_the_batch_and_commit_after_it(
    store: SqlStore, runtime: Runtime
) -> None:
    turns = _turns(store)
    other: list[int] = []
    writer = threading.Thread(target=lambda: other.append(_write_user(store, 50)))
    assert runtime.write_batch is not None
    with runtime.write_batch():
        _add_user(runtime, 1)
        writer.start()
        _wait_until(lambda: turns.queued_writers == 1)
        _add_user(runtime, 2)
        assert other == []  # still queued for the turn the batch holds
    writer.join(10)
    assert other == [1]
    assert count(store, "users") == 3


def test_only_sqlite_has_write_batches() -> None:
    """PostgreSQL's backends write concurrently, each with its own commit; the memory store has
    no commit to share."""
    assert memory_runtime().write_batch is None
    with emptied_postgres_store() as postgres:
        assert postgres.runtime().write_batch is None


def test_writes_after_sqlite_rolled_back_the_batchs_transaction_are_refused_not_committed_alone(
    store: SqlStore, runtime: Runtime
) -> None:
    """A full disk or an I/O error in the middle of a statement makes SQLite roll back the whole
    transaction, not the statement alone. The batch's later writes had then opened their
    savepoints with no transaction around them, which SQLite takes as ``BEGIN``, and their
    ``RELEASE`` committed each on its own at once, before the batch failed: a payment sent once
    answered ``200`` (a replay of itself) when the batch's writes ran again alone, and its
    events were never notified (probe Z). Such writes are refused as lost races instead, and run
    again alone after the batch, as the server runs them."""

    def rolled_back_by_sqlite(tx: Tx) -> None:
        tx.uow.users.add(_user(99))
        # What SQLite does itself on SQLITE_FULL or SQLITE_IOERR mid-statement.
        batch = group_commit_module._held_batch()
        assert batch is not None
        driver = batch.connection.connection.dbapi_connection
        assert driver is not None
        driver.execute("ROLLBACK")
        raise sqlite3.OperationalError("database or disk is full")

    with pytest.raises(ConcurrentWrite), runtime.batch():
        _add_user(runtime, 1)
        with pytest.raises(Exception, match=r"savepoint|disk is full"):
            runtime.transaction(rolled_back_by_sqlite)
        with pytest.raises(ConcurrentWrite):
            _add_user(runtime, 3)
    assert count(store, "users") == 0
    assert _write_user(store, 4) == 1  # the writer turn is free again, and the next write commits
    assert count(store, "users") == 1
