"""Fixtures for the SQL store's own tests: each runs on SQLite and on PostgreSQL.

``sql_store`` is a migrated, empty store (the same factories as the contract suite, see
``tests/stores.py``); ``empty_database_url`` is a database with no schema at all, for the
migration tests.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_sqlstore import SqlStore
from tests.stores import emptied_postgres_store, fresh_postgres_database, fresh_sqlite_store

SQL_STORES = ("sqlite", "postgres")


def open_sql_store(name: str) -> AbstractContextManager[SqlStore]:
    return fresh_sqlite_store() if name == "sqlite" else emptied_postgres_store()


@pytest.fixture(params=SQL_STORES)
def sql_store(request: pytest.FixtureRequest) -> Iterator[SqlStore]:
    with open_sql_store(request.param) as store:
        yield store


@pytest.fixture
def one_connection_postgres_store() -> Iterator[SqlStore]:
    """The session's PostgreSQL database, emptied, through a pool of exactly one connection:
    what one unit of work leaves on the connection is what the next one finds."""
    with emptied_postgres_store() as shared:
        url = shared._url.render_as_string(hide_password=False)
        store = SqlStore(url, pool_size=1, max_overflow=0)
        try:
            yield store
        finally:
            store.dispose()


@pytest.fixture
def one_connection_postgres_runtime(one_connection_postgres_store: SqlStore) -> Runtime:
    return one_connection_postgres_store.runtime(clock=ManualClock())


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sql_runtime(sql_store: SqlStore, clock: ManualClock) -> Runtime:
    return sql_store.runtime(clock=clock)


@pytest.fixture(params=SQL_STORES)
def empty_database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A database without any table: a new SQLite file path, or a new PostgreSQL database."""
    if request.param == "sqlite":
        with tempfile.TemporaryDirectory(prefix="refcore-sqlite-") as directory:
            yield f"sqlite:///{Path(directory) / 'refcore.db'}"
    else:
        with fresh_postgres_database() as url:
            yield url
