"""``GET /v1/health``: a readiness check that reads the database (probe M: ``GET /v1`` answered
``200`` from memory while the database refused connections and every other request failed)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import make_url

from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_sqlstore import SqlStore
from tests.http.world import Client, expect
from tests.stores import fresh_postgres_database


@pytest.fixture
def postgres_store() -> Iterator[SqlStore]:
    with fresh_postgres_database() as url:
        store = SqlStore(url, pool_size=2, max_overflow=0)
        try:
            store.migrate()
            yield store
        finally:
            store.dispose()
            _allow_connections(url, allowed=True)  # so that the database can be dropped


def _allow_connections(url: str, *, allowed: bool) -> None:
    parsed = make_url(url)
    admin_url = parsed.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        name = parsed.database
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
            )


def test_health_fails_while_the_database_refuses_connections_and_recovers_after(
    postgres_store: SqlStore,
) -> None:
    client = Client(create_app(postgres_store.runtime(), Settings(database_url="memory://")))
    assert expect(client.get("/v1/health"), 200)["store"] == "ok"
    _allow_connections(postgres_store._url, allowed=False)
    expect(client.get("/v1/health"), 500, "internal_error")
    assert client.get("/v1").status_code == 200  # why the index is no health check
    _allow_connections(postgres_store._url, allowed=True)
    assert expect(client.get("/v1/health"), 200)["store"] == "ok"
