"""PostgreSQL's read units of work (refcore_sqlstore.postgres_reads): READ ONLY, ended by COMMIT.

psycopg forgets a connection's prepared statements whenever it rolls back; a read ended by
ROLLBACK made PostgreSQL plan every statement on every call. These tests hold one pooled
connection, so what one unit of work leaves on it is what the next one finds.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, text

from refcore.clocks import ManualClock
from refcore.errors import InternalError
from refcore.models import Mode, Organization
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


def test_a_balances_sums_run_on_their_generic_plan_and_nothing_after_them_does(
    store: SqlStore, runtime: Runtime
) -> None:
    """The sums are planned once (``ledger._generic_plan``); PostgreSQL alone would plan them
    anew on every call, and the statements after them in the unit of work keep the default."""

    def balance_then_setting(tx: Tx) -> str:
        tx.uow.ledger().status_sums("aff_nobody", Mode.LIVE, tx.now)
        return str(store_connection(tx).execute(text("SHOW plan_cache_mode")).scalar())

    settings = [runtime.read(balance_then_setting) for _ in range(8)]

    assert set(settings) == {"auto"}
    with store._engine.connect() as connection:
        plans = connection.execute(
            text(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE '%affiliate_balance_buckets%'"
            )
        ).one()
    assert plans.custom_plans == 0 and plans.generic_plans > 0


def store_connection(tx: Tx) -> Connection:
    """The SQL connection under a unit of work of the SQL store."""
    connection = tx.uow._connection  # type: ignore[attr-defined]
    assert isinstance(connection, Connection)
    return connection
