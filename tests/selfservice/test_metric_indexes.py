"""Setup status and overview read aggregates from index ranges, not by walking history.

Every aggregate statement the two services send is captured at the driver and explained by the
database itself: SQLite's ``EXPLAIN QUERY PLAN`` must search the aggregate index of its table
(``refcore_sqlstore.tables``), never ``SCAN`` it; PostgreSQL's planner, given years of older
history and fresh statistics (``ANALYZE``), must choose the same indexes and no sequential scan.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Engine, event, make_url

from refcore.clocks import ManualClock
from refcore.services import overview, setup_status
from refcore_sqlstore import SqlStore
from refcore_sqlstore.tables import metadata
from tests.contract.scenario import build_world
from tests.stores import emptied_postgres_store, fresh_sqlite_store, psycopg_connect

#: The index of ``refcore_sqlstore.tables`` each aggregate of the dashboards must read.
_AGGREGATE_INDEXES = {
    "clicks": "ix_clicks_app_id_mode_created_at",
    "referrals": "ix_referrals_app_id_mode_attributed_created_at",
    "payments": "ix_payments_app_id_mode_attributed_created_at",
    "commission_entries": "ix_commission_entries_app_id_mode_kind_created_at",
    "payout_executions": "ix_payout_executions_app_id_status_completed_at",
}
_AGGREGATE = re.compile(r"^\s*SELECT (count\(\*\)|coalesce\(sum\(|min\()", re.IGNORECASE)
_TABLE = re.compile(r"\bFROM (\w+)", re.IGNORECASE)


@contextmanager
def _captured() -> Iterator[list[tuple[str, Any]]]:
    statements: list[tuple[str, Any]] = []

    def listen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if _AGGREGATE.match(statement):
            statements.append((statement, parameters))

    event.listen(Engine, "before_cursor_execute", listen)
    try:
        yield statements
    finally:
        event.remove(Engine, "before_cursor_execute", listen)


def _aggregates_of_the_dashboards(store: SqlStore) -> list[tuple[str, Any]]:
    world = build_world(store.runtime(clock=ManualClock()), ManualClock())
    customer = world.referred_customer()
    world.pay(customer, 5000)
    with _captured() as statements:
        setup_status.setup_status(world.rt, world.session, world.app.id)
        overview.overview(world.rt, world.session, world.app.id, environment="live")
    assert len(statements) >= 10
    return statements


def _table(statement: str) -> str:
    found = _TABLE.search(statement)
    assert found is not None, statement
    return found.group(1).strip('"')


def test_sqlite_answers_every_aggregate_from_an_index_range() -> None:
    with fresh_sqlite_store() as store:
        statements = _aggregates_of_the_dashboards(store)
        path = make_url(store.safe_url).database
        assert path is not None
        connection = sqlite3.connect(path)
        try:
            for statement, parameters in statements:
                plan = " | ".join(
                    row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + statement, parameters)
                )
                table = _table(statement)
                assert re.search(rf"SEARCH {table} USING (COVERING )?INDEX ix_{table}_\w+", plan), (
                    statement,
                    plan,
                )
                assert f"SCAN {table}" not in plan, (statement, plan)
        finally:
            connection.close()


#: Old history copied into each table for the PostgreSQL test: (table, how many, overrides). The
#: copies are years older than the dashboards' default period, and mostly attributed, so an
#: index that reaches the App's recent rows directly is far cheaper than one that walks them all.
_HISTORY: tuple[tuple[str, int, dict[str, str]], ...] = (
    ("clicks", 20000, {}),
    ("customers", 20000, {"external_customer_id": "NULL", "email": "NULL"}),
    (
        "referrals",
        20000,
        {"customer_id": "'rcus_bulk_' || lpad(n::text, 6, '0')", "attributed": "n % 10 <> 0"},
    ),
    ("payments", 20000, {"payment_id": "'bulk_' || n", "attributed": "n % 10 <> 0"}),
    ("commission_entries", 20000, {}),
)
#: Half the copies in each mode.
_MODE = "CASE WHEN n % 2 = 0 THEN 'live' ELSE 'test' END"


def _prefix(table: str) -> str:
    return {
        "clicks": "clk",
        "customers": "rcus",
        "referrals": "ref",
        "payments": "txn",
        "commission_entries": "com",
    }[table]


def _add_old_history(connection: Any) -> None:
    """Copy one row of each table many times, dated 2020, with new IDs (unique keys respected)."""
    for table, count, overrides in _HISTORY:
        columns = [c.name for c in metadata.tables[table].columns]
        values = {
            **{c: c for c in columns},
            "id": f"'{_prefix(table)}_bulk_' || lpad(n::text, 6, '0')",
            "created_at": "timestamptz '2020-01-01 00:00:00+00' + n * interval '1 minute'",
            "mode": _MODE,
            **overrides,
        }
        select = ", ".join(values[c] for c in columns)
        connection.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) "
            f"SELECT {select} FROM (SELECT * FROM {table} ORDER BY id LIMIT 1) AS source, "
            f"generate_series(1, {count}) AS n"
        )
    # Payouts: none exist yet to copy, so they are written from the affiliate they pay.
    connection.execute(
        "INSERT INTO payout_executions (id, app_id, program_id, program_affiliate_id, amount, currency, "
        "status, created_at, completed_at, completed_manually) "
        "SELECT 'pex_bulk_' || lpad(n::text, 6, '0'), app_id, program_id, id, 100, 'usd', "
        "CASE WHEN n % 10 = 0 THEN 'failed' ELSE 'succeeded' END, "
        "timestamptz '2020-01-01 00:00:00+00' + n * interval '1 minute', "
        "timestamptz '2020-01-01 00:00:00+00' + n * interval '1 minute', true "
        "FROM (SELECT * FROM program_affiliates ORDER BY id LIMIT 1) AS affiliate, "
        "generate_series(1, 20000) AS n"
    )
    connection.execute("ANALYZE")


@pytest.mark.postgres
def test_postgresql_answers_every_aggregate_from_its_aggregate_index() -> None:
    """With a realistic history (and fresh statistics), the planner picks the aggregate indexes."""
    with emptied_postgres_store() as store:
        statements = _aggregates_of_the_dashboards(store)
        with psycopg_connect(store.safe_url) as connection:
            with connection.transaction():
                connection.execute("SET CONSTRAINTS ALL IMMEDIATE")
                _add_old_history(connection)
            for statement, parameters in statements:
                rows = connection.execute("EXPLAIN " + statement, parameters).fetchall()  # type: ignore[arg-type]
                plan = " | ".join(str(row[0]) for row in rows)
                table = _table(statement)
                wanted = _AGGREGATE_INDEXES[table]
                assert re.search(rf"(Index (Only )?Scan using|Bitmap Index Scan on) {wanted}\b", plan), (
                    statement,
                    plan,
                )
                assert "Seq Scan" not in plan, (statement, plan)
