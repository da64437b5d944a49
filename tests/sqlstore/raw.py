"""Reaching past the repositories, for tests that must show what the database itself enforces."""

from __future__ import annotations

import select
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from alembic import command
from sqlalchemy import Connection, Engine, event

from refcore_sqlstore import SqlStore
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.migrate import alembic_config
from tests.stores import psycopg_connect


def engine_of(store: SqlStore) -> Engine:
    """The store's own engine (private on purpose: nothing outside tests should need it)."""
    engine: Engine = store._engine
    return engine


def scalar(store: SqlStore, statement: str, *params: Any) -> Any:
    """Run one read on a plain driver connection of its own, outside any unit of work (on SQLite,
    the store's connections would queue behind a unit of work's write lock). ``?`` placeholders."""
    url = engine_of(store).url
    if url.get_backend_name() == "sqlite":
        assert url.database is not None
        connection = sqlite3.connect(url.database)
        try:
            return connection.execute(statement, params).fetchone()[0]
        finally:
            connection.close()
    with psycopg_connect(url.render_as_string(hide_password=False)) as pg:
        row = pg.execute(statement.replace("?", "%s"), params).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return row[0]


def count(store: SqlStore, table: str, **where: Any) -> int:
    condition = " AND ".join(f"{column} = ?" for column in where) or "1 = 1"
    return int(scalar(store, f"SELECT count(*) FROM {table} WHERE {condition}", *where.values()))


def rows(store: SqlStore, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Every row of one read, on a plain driver connection of its own (see :func:`scalar`)."""
    url = engine_of(store).url
    if url.get_backend_name() == "sqlite":
        assert url.database is not None
        connection = sqlite3.connect(url.database)
        try:
            return [tuple(row) for row in connection.execute(statement, params).fetchall()]
        finally:
            connection.close()
    with psycopg_connect(url.render_as_string(hide_password=False)) as pg:
        return [tuple(row) for row in pg.execute(statement.replace("?", "%s"), params).fetchall()]  # type: ignore[arg-type]


@contextmanager
def recorded_statements(
    store: SqlStore, keep: Callable[[str], bool] = lambda _statement: True
) -> Iterator[list[tuple[str, Any]]]:
    """The SQL text and parameters of each statement the store sends inside the block (those
    ``keep`` accepts), as its ``before_cursor_execute`` listeners hear them."""
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool) -> None:
        if keep(statement):
            statements.append((statement, parameters))

    engine = engine_of(store)
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def terminate_backend(store: SqlStore, driver: Any) -> None:
    """End a PostgreSQL connection of the store from the server's side, as a restart or an idle
    timeout does, and wait until the server's goodbye has reached the connection's socket."""
    url = engine_of(store).url.render_as_string(hide_password=False)
    with psycopg_connect(url) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (driver.info.backend_pid,))
    poller = select.poll()
    poller.register(driver.pgconn.socket, select.POLLIN)
    deadline = time.monotonic() + 10
    while not poller.poll(0):
        assert time.monotonic() < deadline, "the terminated backend never closed its connection"
        time.sleep(0.01)


@contextmanager
def rolled_back(connection: Connection) -> Iterator[Connection]:
    """One transaction on ``connection``, rolled back whatever happens inside: the rows a test
    makes up leave nothing behind, and the foreign keys, checked only at commit, never see the
    parents it made up with them."""
    transaction = connection.begin()
    try:
        yield connection
    finally:
        transaction.rollback()


@contextmanager
def migrated_to(url: str, revision: str) -> Iterator[Connection]:
    """A connection to the empty database at ``url`` migrated to ``revision``, inside one
    transaction rolled back at the end (DDL is transactional on both databases): a migration
    test's made-up rows then never meet the deferred foreign keys, and nothing stays."""
    engine = create_store_engine(normalise_url(url))
    try:
        with engine.connect() as connection:
            transaction = connection.begin()
            command.upgrade(alembic_config(connection), revision)
            yield connection
            transaction.rollback()
    finally:
        engine.dispose()
