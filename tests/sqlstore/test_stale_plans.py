"""Statements prepared before a migration changed a column's type (PostgreSQL).

psycopg prepares a statement on a connection from its fifth run. When a migration then changes
the type of a column the statement returns, PostgreSQL refuses to run it again (``cached plan
must not change result type``), on that connection, until the statement is deallocated. A read
ends in no rollback (``postgres_reads``), so nothing deallocated it: every read of that kind on
that connection failed until the server restarted. Now the unit of work that meets the error
discards its connection, and a read or a write runs again once on another (``errors.py``,
``Runtime.read``).

Each test migrates a database of its own: it alters a column, which the session's shared
database must not see.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import make_url, text

from refcore.clocks import ManualClock
from refcore.errors import InternalError
from refcore.services import tenancy
from refcore.services.runtime import Tx
from refcore_sqlstore import SqlStore
from refcore_sqlstore.errors import database_errors
from tests.stores import fresh_postgres_database

#: Enough runs of a statement on one connection for psycopg to have prepared it.
PREPARED_AFTER = 8


@pytest.fixture(params=[1, 5], ids=["one-pooled-connection", "kept-connections"])
def store(request: pytest.FixtureRequest) -> Iterator[SqlStore]:
    """A migrated database of its own; a pool of one connection (no kept connections: each unit
    of work checks it out) or of five (idle connections kept checked out between units)."""
    with fresh_postgres_database() as url:
        store = SqlStore(url, pool_size=request.param, max_overflow=0)
        try:
            store.migrate()
            yield store
        finally:
            store.dispose()


def _driver_url(store: SqlStore) -> str:
    return make_url(store._url).set(drivername="postgresql").render_as_string(hide_password=False)


def _migrate_session_user_type(store: SqlStore) -> None:
    """What a release's migration might do: change the type of a column a read returns."""
    with psycopg.connect(_driver_url(store), autocommit=True) as admin:
        admin.execute("ALTER TABLE sessions ALTER COLUMN user_id TYPE varchar(200)")


def _backend_pids(store: SqlStore) -> set[int]:
    with psycopg.connect(_driver_url(store), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return {int(row[0]) for row in rows}


def test_a_read_prepared_before_the_migration_runs_again_on_a_new_connection(store: SqlStore) -> None:
    runtime = store.runtime(clock=ManualClock())
    user, token = tenancy.create_session(runtime, "dev@example.com")
    for _ in range(PREPARED_AFTER):
        tenancy.authenticate(runtime, token)
    before = _backend_pids(store)

    _migrate_session_user_type(store)

    for _ in range(3):  # the first ran twice; the ones after find a connection that prepares anew
        assert tenancy.authenticate(runtime, token).user_id == user.id
    assert _backend_pids(store).isdisjoint(before), "the stale connection was kept"


@pytest.mark.parametrize("store", [5], indirect=True, ids=["kept-connections"])
def test_a_read_runs_again_until_it_finds_a_connection_prepared_after_the_migration(
    store: SqlStore,
) -> None:
    """Probe K: two reads failed after one run again, each having met a second connection that
    had prepared the statement before the migration. Here two kept connections have."""
    runtime = store.runtime(clock=ManualClock())
    user, token = tenancy.create_session(runtime, "dev@example.com")
    for _ in range(PREPARED_AFTER):
        tenancy.authenticate(runtime, token)  # prepared on the first connection
    with store.read_unit_of_work():  # holds the first, so that the reads below take a second
        for _ in range(PREPARED_AFTER):
            tenancy.authenticate(runtime, token)
    stale = _backend_pids(store)
    assert len(stale) >= 2

    _migrate_session_user_type(store)

    assert tenancy.authenticate(runtime, token).user_id == user.id
    assert _backend_pids(store).isdisjoint(stale), "a connection prepared before the migration was kept"


def test_a_read_of_a_shared_block_runs_again_when_it_opened_the_blocks_unit_of_work(
    store: SqlStore,
) -> None:
    """A keyed ``GET`` reads in a shared block: its first read is the credential's."""
    runtime = store.runtime(clock=ManualClock())
    user, token = tenancy.create_session(runtime, "dev@example.com")
    for _ in range(PREPARED_AFTER):
        tenancy.authenticate(runtime, token)

    _migrate_session_user_type(store)

    with runtime.shared_read():
        assert tenancy.authenticate(runtime, token).user_id == user.id
        assert tenancy.authenticate(runtime, token).user_id == user.id


def test_a_write_prepared_before_the_migration_runs_again_on_a_new_connection(store: SqlStore) -> None:
    runtime = store.runtime(clock=ManualClock())
    user, _token = tenancy.create_session(runtime, "dev@example.com")

    def owners(tx: Tx) -> list[str]:
        return [session.user_id for session in tx.uow.sessions.find_all({})]

    for _ in range(PREPARED_AFTER):
        runtime.transaction(owners)

    _migrate_session_user_type(store)

    assert runtime.transaction(owners) == [user.id]


def test_a_read_failing_inside_another_read_of_its_block_runs_again_with_the_outer_one(
    store: SqlStore,
) -> None:
    """The outer read still holds the block's unit of work, on the stale connection: the inner
    read fails without running again there, and the outer one runs again, on a new one."""
    runtime = store.runtime(clock=ManualClock())
    user, token = tenancy.create_session(runtime, "dev@example.com")
    for _ in range(PREPARED_AFTER):
        tenancy.authenticate(runtime, token)
    runs = 0

    def outer(tx: Tx) -> str:
        nonlocal runs
        runs += 1
        return tenancy.authenticate(runtime, token).user_id

    _migrate_session_user_type(store)

    with runtime.shared_read():
        assert runtime.read(outer) == user.id
    assert runs == 2


def test_only_the_stale_plan_error_of_its_kind_is_run_again(store: SqlStore) -> None:
    """``FeatureNotSupported`` has other causes, which running again cannot cure."""
    with store._engine.connect() as connection, pytest.raises(InternalError), database_errors():
        connection.execute(text("SELECT count(*) FROM sessions FOR UPDATE"))
