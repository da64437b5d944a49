"""The stores every contract test runs against, by name.

Each entry builds a fresh, empty :class:`~refcore.services.runtime.Runtime` on one store for one
test and tears it down after. A new store joins the whole contract suite by adding one entry here
(and, if it needs a server, a skip-or-fail check in its factory).

- ``memory``: a new in-memory database.
- ``sqlite``: a new SQLite file in its own temporary directory. Migrating takes longer than a
  test, so the schema is migrated once per test session into a template file that each test
  copies.
- ``postgres``: one database per test session (per xdist worker), created on the server of
  ``REFCORE_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``),
  migrated once, emptied before each test (:func:`empty_all_tables`), and dropped when the session ends
  (:func:`close_stores`, called by ``tests/conftest.py``). When the server cannot be reached the
  test is skipped with the reason, or fails when ``REFCORE_REQUIRE_POSTGRES=1`` (CI).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import URL, make_url

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_memstore import memory_runtime
from refcore_sqlstore import SqlStore
from refcore_sqlstore.tables import metadata

StoreFactory = Callable[[ManualClock], AbstractContextManager[Runtime]]

POSTGRES_URL_VARIABLE = "REFCORE_TEST_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REQUIRE_POSTGRES_VARIABLE = "REFCORE_REQUIRE_POSTGRES"


@contextmanager
def memory_store(clock: ManualClock) -> Iterator[Runtime]:
    yield memory_runtime(clock=clock)


# -- SQLite ----------------------------------------------------------------------------------

_sqlite_template: Path | None = None


def _migrated_sqlite_template() -> Path:
    """A migrated, empty SQLite file made once per session; tests copy it instead of migrating."""
    global _sqlite_template
    if _sqlite_template is None:
        path = Path(tempfile.mkdtemp(prefix="refcore-sqlite-template-")) / "template.db"
        store = SqlStore(f"sqlite:///{path}")
        store.migrate()
        store.dispose()  # the last connection to close checkpoints the WAL into the file
        _sqlite_template = path
    return _sqlite_template


@contextmanager
def fresh_sqlite_store() -> Iterator[SqlStore]:
    """A migrated, empty SQLite file in a new temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="refcore-sqlite-") as directory:
        path = Path(directory) / "refcore.db"
        shutil.copyfile(_migrated_sqlite_template(), path)
        store = SqlStore(f"sqlite:///{path}")
        try:
            yield store
        finally:
            store.dispose()


@contextmanager
def sqlite_store(clock: ManualClock) -> Iterator[Runtime]:
    with fresh_sqlite_store() as store:
        yield store.runtime(clock=clock)


# -- PostgreSQL ------------------------------------------------------------------------------


def libpq_url(url: str | URL) -> str:
    """An SQLAlchemy-style URL (``postgresql+psycopg://…``) as psycopg and libpq take it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def psycopg_connect(url: str | URL) -> psycopg.Connection[tuple[object, ...]]:
    """A plain autocommit psycopg connection to a database given by an SQLAlchemy-style URL."""
    return psycopg.connect(libpq_url(url), autocommit=True, connect_timeout=5)


class PostgresServer:
    """The test PostgreSQL server: creates uniquely named databases and drops them."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg_connect(self.url)

    def create_database(self) -> str:
        """A new empty database; returns its URL."""
        name = f"refcore_test_{uuid.uuid4().hex[:16]}"
        with self._admin() as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return make_url(self.url).set(database=name).render_as_string(hide_password=False)

    def drop_database(self, url: str) -> None:
        name = make_url(url).database
        assert name is not None and name.startswith("refcore_test_"), name
        with self._admin() as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


_postgres: PostgresServer | None = None
_postgres_problem: str | None = None


def postgres_server() -> PostgresServer:
    """The reachable test server, or skip (fail when ``REFCORE_REQUIRE_POSTGRES=1``) with the reason."""
    global _postgres, _postgres_problem
    if _postgres is None and _postgres_problem is None:
        url = os.environ.get(POSTGRES_URL_VARIABLE, DEFAULT_POSTGRES_URL)
        server = PostgresServer(url)
        try:
            with server._admin() as connection:
                connection.execute("SELECT 1")
            _postgres = server
        except psycopg.Error as error:
            safe = make_url(url).render_as_string(hide_password=True)
            _postgres_problem = (
                f"PostgreSQL at {safe} cannot be reached ({type(error).__name__}: "
                f"{str(error).strip().splitlines()[0] if str(error).strip() else 'no detail'}); "
                f"start it or set {POSTGRES_URL_VARIABLE}"
            )
    if _postgres is None:
        assert _postgres_problem is not None
        if os.environ.get(REQUIRE_POSTGRES_VARIABLE) == "1":
            pytest.fail(f"{_postgres_problem} ({REQUIRE_POSTGRES_VARIABLE}=1)", pytrace=False)
        pytest.skip(_postgres_problem)
    return _postgres


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty (not migrated) database for one test; dropped afterwards."""
    server = postgres_server()
    url = server.create_database()
    try:
        yield url
    finally:
        server.drop_database(url)


_session_postgres: SqlStore | None = None
_session_postgres_url: str | None = None


def empty_all_tables(url: str) -> None:
    """Delete every row of every refcore table of a PostgreSQL database.

    Much faster than ``TRUNCATE`` (which rewrites every table's files) or a new database, because
    a test leaves only a handful of rows in a few tables. The ledger's append-only trigger is
    switched off only inside this one transaction.
    """
    tables = [table.name for table in metadata.sorted_tables]
    probe = sql.SQL(" UNION ALL ").join(
        sql.SQL("(SELECT {} FROM {} LIMIT 1)").format(sql.Literal(name), sql.Identifier(name))
        for name in tables
    )
    with psycopg_connect(url) as connection:
        filled = {str(row[0]) for row in connection.execute(probe)}
        if not filled:
            return
        with connection.transaction():
            connection.execute("SET LOCAL lock_timeout = '30s'")
            # Immediate checks leave no pending trigger events, which ALTER TABLE would refuse;
            # deleting dependents first (reverse dependency order) satisfies them.
            connection.execute("SET CONSTRAINTS ALL IMMEDIATE")
            connection.execute(
                "ALTER TABLE commission_entries DISABLE TRIGGER commission_entries_append_only"
            )
            for name in reversed(tables):
                if name in filled:
                    connection.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(name)))
            # Deleting payout items gives their entries back to the balance projection (a trigger,
            # migration 0004), so the projection is emptied once more after everything else.
            connection.execute("DELETE FROM affiliate_balance_buckets")
            connection.execute("ALTER TABLE commission_entries ENABLE TRIGGER commission_entries_append_only")


@contextmanager
def emptied_postgres_store() -> Iterator[SqlStore]:
    """The session's migrated PostgreSQL database, emptied; shared by the tests of one session."""
    global _session_postgres, _session_postgres_url
    server = postgres_server()
    if _session_postgres is None:
        _session_postgres_url = server.create_database()
        _session_postgres = SqlStore(_session_postgres_url)
        _session_postgres.migrate()
    assert _session_postgres_url is not None
    empty_all_tables(_session_postgres_url)
    try:
        yield _session_postgres
    finally:
        _session_postgres.dispose()


@contextmanager
def postgres_store(clock: ManualClock) -> Iterator[Runtime]:
    with emptied_postgres_store() as store:
        yield store.runtime(clock=clock)


def close_stores() -> None:
    """Drop the session's PostgreSQL database and remove the SQLite template (end of session)."""
    global _session_postgres, _session_postgres_url, _sqlite_template
    if _session_postgres is not None and _postgres is not None and _session_postgres_url is not None:
        _session_postgres.dispose()
        _postgres.drop_database(_session_postgres_url)
    _session_postgres = _session_postgres_url = None
    if _sqlite_template is not None:
        shutil.rmtree(_sqlite_template.parent, ignore_errors=True)
        _sqlite_template = None


STORES: dict[str, StoreFactory] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
    "postgres": postgres_store,
}
