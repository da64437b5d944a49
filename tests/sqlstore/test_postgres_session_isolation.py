"""PostgreSQL sessions default to ``READ COMMITTED`` (``refcore_sqlstore.engine``).

Reads, and a transaction's only write, run in autocommit outside any ``BEGIN`` refcore sends
(``refcore_sqlstore.postgres_round_trips``), so they take the session's default isolation. The
session's options set it to the isolation refcore's own ``BEGIN`` states, above a default of
the server's, the database's or the role's, and after the URL's own options.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from sqlalchemy import make_url

from refcore.clocks import ManualClock
from refcore.models import Organization
from refcore_sqlstore import SqlStore
from tests.sqlstore.test_postgres_time_zone import CREATED, setting, store_with_options


@contextmanager
def database_default(store: SqlStore, isolation: str) -> Iterator[None]:
    """``ALTER DATABASE … SET default_transaction_isolation`` for the block (new sessions only)."""
    url = make_url(store._url.render_as_string(hide_password=False))
    admin_url = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE \"{url.database}\" SET default_transaction_isolation = '{isolation}'")
        try:
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{url.database}" RESET default_transaction_isolation')


def test_sessions_default_to_read_committed_over_the_databases_serializable() -> None:
    with store_with_options(None) as probe, database_default(probe, "serializable"):
        with psycopg.connect(
            make_url(probe._url.render_as_string(hide_password=False))
            .set(drivername="postgresql")
            .render_as_string(hide_password=False)
        ) as plain:  # what the database now gives a session without refcore's options
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
