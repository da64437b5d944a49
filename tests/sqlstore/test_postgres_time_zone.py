"""PostgreSQL sessions run in UTC (``refcore_sqlstore.engine``), and reads are UTC whatever the zone;
they run without JIT compilation.

In UTC, psycopg hands ``timestamptz`` values over as ``datetime.UTC`` values, which
``UtcDateTime`` passes on without converting; an operator's own ``TimeZone`` in the URL's
``options`` still works, through the conversion.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import make_url, text

from refcore.clocks import ManualClock
from refcore.models import Organization
from refcore_sqlstore import SqlStore
from tests.stores import emptied_postgres_store

CREATED = datetime(2026, 3, 1, 23, 30, 0, 250000, tzinfo=timezone(timedelta(hours=-5)))


@contextmanager
def store_with_options(options: str | None) -> Iterator[SqlStore]:
    with emptied_postgres_store() as shared:
        url = make_url(shared._url.render_as_string(hide_password=False))
        if options is not None:
            url = url.update_query_dict({"options": options})
        store = SqlStore(url.render_as_string(hide_password=False), pool_size=1, max_overflow=0)
        try:
            yield store
        finally:
            store.dispose()


def setting(store: SqlStore, name: str) -> str:
    with store._engine.connect() as connection:
        return str(connection.execute(text(f"SHOW {name}")).scalar_one())


def stored_and_read_back(store: SqlStore) -> datetime:
    runtime = store.runtime(clock=ManualClock())
    runtime.transaction(
        lambda tx: tx.uow.organizations.add(Organization(id="org_1", name="Acme", created_at=CREATED))
    )
    found = runtime.read(lambda tx: tx.uow.organizations.get("org_1"))
    assert found is not None
    return found.created_at


def test_sessions_run_in_utc_and_instants_read_back_in_datetime_utc() -> None:
    with store_with_options(None) as store:
        assert setting(store, "TimeZone") == "UTC"
        read = stored_and_read_back(store)
    assert read == CREATED and read.tzinfo is UTC


def test_the_urls_own_options_are_kept_beside_the_utc_session() -> None:
    with store_with_options("-c statement_timeout=4321") as store:
        assert setting(store, "statement_timeout") == "4321ms"
        assert setting(store, "TimeZone") == "UTC"


def test_an_operators_own_time_zone_wins_and_reads_are_still_utc() -> None:
    with store_with_options("-c TimeZone=Asia/Kolkata") as store:
        assert setting(store, "TimeZone") == "Asia/Kolkata"
        read = stored_and_read_back(store)
    assert read == CREATED and read.tzinfo is UTC


def test_sessions_compile_no_statement_to_machine_code_unless_the_url_asks() -> None:
    """``jit`` is off: a generic plan's pessimistic cost had crossed ``jit_above_cost`` on a
    ledger of a million entries, and the ready-payouts page spent 28 of its 30 ms compiling."""
    with store_with_options(None) as store:
        assert setting(store, "jit") == "off"
    with store_with_options("-c jit=on") as store:
        assert setting(store, "jit") == "on"
