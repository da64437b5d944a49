"""PostgreSQL sessions default to ``READ COMMITTED`` (``refcore_sqlstore.engine``).

Reads, and a transaction's only write, run in autocommit outside any ``BEGIN`` refcore sends
(``refcore_sqlstore.postgres_round_trips``), so they take the session's default isolation. The
session's options set it to the isolation refcore's own ``BEGIN`` states, above a default of
the server's, the database's or the role's, and after the URL's own options.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import make_url

from refcore.clocks import ManualClock
from refcore.models import Organization
from refcore_sqlstore import SqlStore
from tests.sqlstore.test_postgres_time_zone import CREATED, setting, store_with_options
from tests.stores import psycopg_connect


def _url(store: SqlStore) -> str:
    return store._url.render_as_string(hide_password=False)


@contextmanager
def database_default(store: SqlStore, isolation: str) -> Iterator[None]:
    """``ALTER DATABASE … SET default_transaction_isolation`` for the block (new sessions only)."""
    database = make_url(_url(store)).database
    with psycopg_connect(_url(store)) as admin:
        admin.execute(f"ALTER DATABASE \"{database}\" SET default_transaction_isolation = '{isolation}'")
        try:
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{database}" RESET default_transaction_isolation')


def test_sessions_default_to_read_committed_over_the_databases_serializable() -> None:
    with store_with_options(None) as probe, database_default(probe, "serializable"):
        with psycopg_connect(_url(probe)) as plain:  # a session without refcore's options
            assert plain.execute("SHOW default_transaction_isolation").fetchone() == ("serializable",)
        with store_with_options(None) as store:
            assert setting(store, "default_transaction_isolation") == "read committed"
            runtime = store.runtime(clock=ManualClock())
            runtime.transaction(
                lambda tx: tx.uow.organizations.add(Organization(id="org_1", name="Acme", created_at=CREATED))
            )
            assert runtime.read(lambda tx: tx.uow.organizations.get("org_1")) is not None


def test_an_isolation_in_the_urls_options_does_not_override_read_committed() -> None:
    options = "-c default_transaction_isolation=serializable -c statement_timeout=4321"
    with store_with_options(options) as store:
        assert setting(store, "default_transaction_isolation") == "read committed"
        assert setting(store, "statement_timeout") == "4321ms"
