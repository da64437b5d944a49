"""SQLite group commit (refcore_sqlstore.group_commit): writers queued behind one another share one
COMMIT, each answer still waits for its own writes to be durable, and one failing member costs
its neighbours nothing but a retry."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, InternalError
from refcore.models import Session, User
from refcore.services.runtime import Runtime, Tx
from refcore_sqlstore import SqlStore
from refcore_sqlstore.group_commit import GroupCommit, Savepoint, group_commit
from tests.sqlstore.raw import count, engine_of
from tests.stores import fresh_sqlite_store

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WRITERS = 6


def _user(number: int) -> User:
    return User(id=f"usr_{number:04d}", email=f"user{number}@example.com", created_at=NOW)


@pytest.fixture
def store() -> Iterator[SqlStore]:
    with fresh_sqlite_store() as sqlite:
        yield sqlite


def _turns(store: SqlStore) -> GroupCommit:
    turns = group_commit(engine_of(store))
    assert turns is not None
    return turns


def _commits(store: SqlStore) -> list[int]:
    """Counts every COMMIT the store's engine sends from now on (one element per COMMIT)."""
    seen: list[int] = []
    event.listen(engine_of(store), "commit", lambda _connection: seen.append(1))
    return seen


def _wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def _queue_behind_first(
    store: SqlStore, first: Callable[[Callable[[], None]], Any], others: list[Callable[[], Any]]
) -> list[Any]:
    """Run ``first`` in a writer that keeps the turn until every one of ``others`` is queued
    behind it, so that all of them end in the first writer's group; results in order."""
    results: list[Any] = [None] * (1 + len(others))
    turns = _turns(store)
    entered = threading.Event()

    waited = threading.Event()

    def wait_for_the_others() -> None:
        """Once only: a retried first writer must not wait again."""
        if not waited.is_set():
            waited.set()
            entered.set()
            _wait_until(lambda: turns.queued_writers == len(others))

    def lead() -> None:
        try:
            results[0] = first(wait_for_the_others)
        except BaseException as error:
            results[0] = error

    def follow(index: int, call: Callable[[], Any]) -> None:
        entered.wait()
        try:
            results[index] = call()
        except BaseException as error:
            results[index] = error

    threads = [threading.Thread(target=lead)]
    threads += [threading.Thread(target=follow, args=(i + 1, c)) for i, c in enumerate(others)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def _write_user(store: SqlStore, number: int, before_commit: Callable[[], object] = lambda: None) -> int:
    with store.unit_of_work() as uow:
        uow.users.add(_user(number))
        before_commit()
        uow.commit()
        # The port's promise: durable and visible to every other connection once commit returns.
        return count(store, "users", id=_user(number).id)


def _add_user_through_the_runtime(
    runtime: Runtime,
    number: int,
    before_commit: Callable[[], object] = lambda: None,
    attempts: dict[str, int] | None = None,
) -> str:
    """One user written by ``Runtime.transaction`` (which retries on ``ConcurrentWrite``),
    counting each run of the work in ``attempts``."""

    def work(tx: Tx) -> str:
        if attempts is not None:
            attempts[f"user{number}"] = attempts.get(f"user{number}", 0) + 1
        tx.uow.users.add(_user(number))
        before_commit()
        return "stored"

    return runtime.transaction(work)


def test_writers_queued_behind_one_another_share_one_commit(store: SqlStore) -> None:
    commits = _commits(store)
    results = _queue_behind_first(
        store,
        lambda wait: _write_user(store, 0, wait),
        [lambda n=n: _write_user(store, n) for n in range(1, WRITERS)],
    )
    assert results == [1] * WRITERS  # each saw its own row committed when its commit returned
    assert count(store, "users") == WRITERS
    assert len(commits) == 1


def test_a_lone_writer_commits_at_once(store: SqlStore) -> None:
    commits = _commits(store)
    assert _write_user(store, 1) == 1
    assert _write_user(store, 2) == 1
    assert len(commits) == 2


def test_a_member_that_fails_rolls_back_only_its_own_writes(store: SqlStore) -> None:
    def failing() -> None:
        with store.unit_of_work() as uow:
            uow.users.add(_user(99))
            raise LookupError("the work failed")

    results = _queue_behind_first(
        store, lambda wait: _write_user(store, 0, wait), [failing, lambda: _write_user(store, 1)]
    )
    assert results[0] == 1 and results[2] == 1
    assert isinstance(results[1], LookupError)
    assert count(store, "users") == 2
    assert count(store, "users", id=_user(99).id) == 0


def test_a_group_refused_at_commit_retries_its_innocent_members_alone(store: SqlStore) -> None:
    """A deferred foreign key broken by one member fails the group's COMMIT: the others run again
    by themselves through ``Runtime.transaction`` and are stored; only the culprit fails."""
    runtime = store.runtime(clock=ManualClock(NOW))
    attempts: dict[str, int] = {}

    def add_user(number: int, before_commit: Callable[[], object] = lambda: None) -> str:
        return _add_user_through_the_runtime(runtime, number, before_commit, attempts)

    def dangling_session() -> str:
        def work(tx: Tx) -> str:
            attempts["dangling"] = attempts.get("dangling", 0) + 1
            tx.uow.sessions.add(Session(id="ses_1", user_id="usr_nobody", token_digest="d", created_at=NOW))
            return "stored"

        return runtime.transaction(work)

    commits = _commits(store)
    results = _queue_behind_first(
        store, lambda wait: add_user(0, wait), [dangling_session, lambda: add_user(1), lambda: add_user(2)]
    )
    assert results[0] == results[2] == results[3] == "stored"
    assert isinstance(results[1], InternalError)
    assert count(store, "users") == 3
    assert count(store, "sessions") == 0
    # Every member ran twice (the group, then alone); the culprit's second failure is final.
    assert attempts == {"user0": 2, "user1": 2, "user2": 2, "dangling": 2}
    assert len(commits) >= 4


def test_a_group_is_committed_when_full_even_with_writers_queued(store: SqlStore) -> None:
    turns = _turns(store)
    commits = _commits(store)
    turns._max_group = 2
    try:
        results = _queue_behind_first(
            store,
            lambda wait: _write_user(store, 0, wait),
            [lambda n=n: _write_user(store, n) for n in range(1, WRITERS)],
        )
    finally:
        turns._max_group = 64
    assert results == [1] * WRITERS
    assert len(commits) == WRITERS // 2


def test_a_second_writer_in_the_same_thread_fails_at_once(store: SqlStore) -> None:
    """Instead of waiting forever for a turn its own thread holds."""
    with store.unit_of_work() as outer:
        outer.users.add(_user(1))
        with pytest.raises(InternalError), store.unit_of_work():
            pass
        outer.commit()
    assert count(store, "users") == 1


def test_writes_after_a_commit_join_a_new_group_and_the_rest_rolls_back(store: SqlStore) -> None:
    with store.unit_of_work() as uow:
        uow.users.add(_user(1))
        uow.commit()
        uow.users.add(_user(2))
        uow.commit()
        uow.users.add(_user(3))  # never committed
    assert count(store, "users") == 2
    assert count(store, "users", id=_user(3).id) == 0
    # The turn is free again: another thread writes at once.
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(_write_user(store, 4)))
    thread.start()
    thread.join(5)
    assert done == [1]


def test_a_writer_that_gives_up_waiting_leaves_no_group_behind(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer still queued after the busy timeout gets ``ConcurrentWrite`` (the retry signal);
    the writer holding the turn then finds nobody queued and commits its group itself."""
    import refcore_sqlstore.group_commit as module

    monkeypatch.setattr(module, "SQLITE_BUSY_TIMEOUT_SECONDS", 0.2)
    turns = _turns(store)
    gave_up: list[BaseException] = []

    def impatient() -> None:
        try:
            _write_user(store, 2)
        except BaseException as error:
            gave_up.append(error)

    def hold_the_turn() -> None:
        thread = threading.Thread(target=impatient)
        thread.start()
        _wait_until(lambda: turns.queued_writers == 1)
        thread.join(5)  # it gives up while this writer still holds the turn

    assert _write_user(store, 1, hold_the_turn) == 1
    assert len(gave_up) == 1 and isinstance(gave_up[0], ConcurrentWrite)
    assert count(store, "users") == 1
    assert turns.queued_writers == 0
    assert _write_user(store, 3) == 1


def test_a_savepoint_that_cannot_be_released_breaks_its_group(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If a member's savepoint cannot be released, its writes may still sit in the shared
    transaction: the group is rolled back, not committed; its other members run again alone."""
    runtime = store.runtime(clock=ManualClock(NOW))
    refused: list[Savepoint] = []
    release = Savepoint.commit

    def commit_unless_refused(savepoint: Savepoint) -> None:
        if savepoint in refused:
            raise OperationalError("RELEASE member_2", {}, sqlite3.OperationalError("disk I/O error"))
        release(savepoint)

    monkeypatch.setattr(Savepoint, "commit", commit_unless_refused)

    def add_user(number: int, before_commit: Callable[[], object] = lambda: None) -> str:
        return _add_user_through_the_runtime(runtime, number, before_commit)

    def unreleasable() -> str:
        def work(tx: Tx) -> str:
            tx.uow.users.add(_user(99))
            refused.append(tx.uow._membership[1])  # type: ignore[attr-defined]
            return "stored"

        return runtime.transaction(work)

    results = _queue_behind_first(store, lambda wait: add_user(0, wait), [unreleasable, lambda: add_user(1)])
    assert results[0] == results[2] == "stored"
    assert isinstance(results[1], InternalError)
    assert count(store, "users", id=_user(99).id) == 0
    assert count(store, "users") == 2


def test_a_write_rolled_back_behind_the_unit_of_works_back_is_never_reported_kept(store: SqlStore) -> None:
    with store.unit_of_work() as uow:
        uow.users.add(_user(1))
        uow._membership[1].rollback()  # type: ignore[attr-defined]
        with pytest.raises(InternalError):
            uow.commit()
    assert count(store, "users") == 0
    assert _write_user(store, 2) == 1  # the turn was given back


def _driver_connections(store: SqlStore) -> list[object]:
    """The driver connection of every unit of work's writes from now on, one per BEGIN."""
    seen: list[object] = []
    event.listen(
        engine_of(store), "begin", lambda connection: seen.append(connection.connection.dbapi_connection)
    )
    return seen


def test_groups_one_after_another_write_on_one_connection_kept_out_of_the_pool(store: SqlStore) -> None:
    """The writer connection is not checked in and out around every group (a seventh of the
    server's interpreter time); between groups it holds no transaction, so nothing is locked."""
    engine = engine_of(store)
    begun = _driver_connections(store)
    assert [_write_user(store, number) for number in range(3)] == [1, 1, 1]
    assert len(begun) == 3 and begun[0] is begun[1] is begun[2]
    assert engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    writer = begun[0]
    assert isinstance(writer, sqlite3.Connection) and not writer.in_transaction
    other = sqlite3.connect(str(engine.url.database), timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # the write lock is free between groups
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_a_group_refused_at_commit_drops_its_connection_and_the_next_group_opens_another(
    store: SqlStore,
) -> None:
    runtime = store.runtime(clock=ManualClock(NOW))
    begun = _driver_connections(store)
    assert _write_user(store, 0) == 1

    def dangling_session(tx: Tx) -> None:
        tx.uow.sessions.add(Session(id="ses_1", user_id="usr_nobody", token_digest="d", created_at=NOW))

    with pytest.raises(InternalError):
        runtime.transaction(dangling_session)
    assert _write_user(store, 1) == 1
    assert begun[0] is not begun[-1]
    assert engine_of(store).pool.checkedout() == 1  # type: ignore[attr-defined]


def test_disposing_the_store_gives_the_writer_connection_back(store: SqlStore) -> None:
    engine = engine_of(store)
    assert _write_user(store, 0) == 1
    assert engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    store.dispose()
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    assert _write_user(store, 1) == 1  # and writes again afterwards
