"""PostgreSQL's read units of work (refcore_sqlstore.postgres_reads): autocommit, writes refused.

psycopg forgets a connection's prepared statements whenever it rolls back; a read ended by
ROLLBACK made PostgreSQL plan every statement on every call. These tests hold one pooled
connection, so what one unit of work leaves on it is what the next one finds.
"""

from __future__ import annotations

import psycopg
import pytest
from attrs import evolve
from sqlalchemy import Connection, text

from refcore.clocks import ManualClock
from refcore.errors import InternalError
from refcore.models import Mode, Organization
from refcore.services import tenancy
from refcore.services.runtime import Runtime, Tx
from refcore_sqlstore import SqlStore, postgres_round_trips
from tests.stores import libpq_url


@pytest.fixture
def store(one_connection_postgres_store: SqlStore) -> SqlStore:
    return one_connection_postgres_store


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


@pytest.mark.parametrize("write", ["add", "add_all", "replace"])
def test_a_write_inside_a_read_is_refused_and_nothing_is_kept(runtime: Runtime, write: str) -> None:
    """Outside a transaction PostgreSQL would commit an UPDATE at once: the repository refuses."""
    organization = Organization(id="org_1", name="Before", created_at=runtime.clock.now())
    runtime.transaction(lambda tx: tx.uow.organizations.add(organization))
    changed = evolve(organization, id="org_2" if write != "replace" else "org_1", name="After")

    def attempt(tx: Tx) -> None:
        repository = tx.uow.organizations
        {
            "add": repository.add,
            "add_all": lambda item: repository.add_all([item]),
            "replace": repository.replace,
        }[write](changed)

    with pytest.raises(InternalError, match="read unit of work cannot write"):
        runtime.read(attempt)

    assert runtime.read(lambda tx: tx.uow.organizations.find_all({})) == [organization]


def test_each_statement_of_a_read_sees_what_was_committed_before_it(
    store: SqlStore, runtime: Runtime
) -> None:
    """READ COMMITTED, as inside a transaction: a write committed between two statements of one
    read is seen by the second."""
    now = runtime.clock.now()
    with store.read_unit_of_work() as uow:
        assert uow.organizations.find_all({}) == []
        with psycopg.connect(_plain_url(store)) as other:
            other.execute(
                "INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Other', %s)", (now,)
            )
        assert [found.id for found in uow.organizations.find_all({})] == ["org_1"]


def test_the_connection_goes_back_to_the_pool_writable(store: SqlStore, runtime: Runtime) -> None:
    runtime.read(lambda tx: tx.uow.organizations.find_all({}))

    _user, token = tenancy.create_session(runtime, "dev@example.com")  # the same one connection

    principal = tenancy.authenticate(runtime, token)
    assert principal.user_id is not None
    with store.unit_of_work() as uow:  # transactional again: what is not committed is not kept
        uow.organizations.add(Organization(id="org_1", name="Uncommitted", created_at=runtime.clock.now()))
    assert runtime.read(lambda tx: tx.uow.organizations.find_all({})) == []
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


def test_a_balance_in_a_write_unit_of_work_takes_set_local_and_in_a_read_a_session_set(
    store: SqlStore, runtime: Runtime
) -> None:
    """``ledger._generic_plan`` asks whether a transaction is open or about to be: a write unit
    of work's ``BEGIN`` may still wait to go with its next statement, a read begins none."""

    def transaction_state(tx: Tx) -> tuple[bool, bool, str]:
        connection = store_connection(tx)
        before = postgres_round_trips.in_transaction(connection)
        tx.uow.ledger().status_sums("aff_nobody", Mode.LIVE, tx.now)
        after = postgres_round_trips.in_transaction(connection)
        return before, after, str(connection.execute(text("SHOW plan_cache_mode")).scalar())

    assert runtime.transaction(transaction_state) == (True, True, "auto")
    assert runtime.read(transaction_state) == (False, False, "auto")


def store_connection(tx: Tx) -> Connection:
    """The SQL connection under a unit of work of the SQL store."""
    connection = tx.uow._connection  # type: ignore[attr-defined]
    assert isinstance(connection, Connection)
    return connection


def _plain_url(store: SqlStore) -> str:
    return libpq_url(store._engine.url)
