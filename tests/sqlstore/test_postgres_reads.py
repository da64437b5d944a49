"""PostgreSQL's read units of work (refcore_sqlstore.postgres_reads): READ ONLY, ended by COMMIT.

psycopg forgets a connection's prepared statements whenever it rolls back; a read ended by
ROLLBACK made PostgreSQL plan every statement on every call. These tests hold one pooled
connection, so what one unit of work leaves on it is what the next one finds.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from refcore.clocks import ManualClock
from refcore.errors import InternalError
from refcore.models import Organization
from refcore.services import tenancy
from refcore.services.runtime import Runtime, Tx
from refcore_sqlstore import SqlStore
from tests.stores import emptied_postgres_store


@pytest.fixture
def store() -> Iterator[SqlStore]:
    """The session's PostgreSQL database through a pool of exactly one connection."""
    with emptied_postgres_store() as shared:
        store = SqlStore(shared._url.render_as_string(hide_password=False), pool_size=1, max_overflow=0)
        try:
            yield store
        finally:
            store.dispose()


@pytest.fixture
def runtime(store: SqlStore) -> Runtime:
    return store.runtime(clock=ManualClock())


def prepared_statements(store: SqlStore) -> list[str]:
    with store._engine.connect() as connection:
        return list(connection.execute(text("SELECT statement FROM pg_prepared_statements")).scalars())


def test_statements_of_repeated_reads_stay_prepared(store: SqlStore, runtime: Runtime) -> None:
    _user, token = tenancy.create_session(runtime, "dev@example.com")
    for _ in range(8):  # psycopg prepares a statement from its fifth run on a connection
        tenancy.authenticate(runtime, token)

    statements = prepared_statements(store)

    assert any("FROM sessions" in statement for statement in statements), statements


def test_a_write_inside_a_read_is_refused_by_the_database(runtime: Runtime) -> None:
    def write(tx: Tx) -> None:
        tx.uow.organizations.add(Organization(id=tx.new_id("org"), name="Nope", created_at=tx.now))

    with pytest.raises(InternalError):
        runtime.read(write)

    assert runtime.read(lambda tx: tx.uow.organizations.find_all({})) == []


def test_the_connection_goes_back_to_the_pool_writable(store: SqlStore, runtime: Runtime) -> None:
    runtime.read(lambda tx: tx.uow.organizations.find_all({}))

    _user, token = tenancy.create_session(runtime, "dev@example.com")  # the same one connection

    principal = tenancy.authenticate(runtime, token)
    assert principal.user_id is not None
    with store._engine.connect() as connection:
        assert connection.execute(text("SHOW transaction_read_only")).scalar() == "off"
