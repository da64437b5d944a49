"""The unit of work: one transaction, invisible until commit, discarded otherwise; row locks on
PostgreSQL and the write lock on SQLite."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone

import psycopg
import pytest
from sqlalchemy import make_url, select

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, InternalError
from refcore.models import Event, EventType, Organization, User
from refcore.services.runtime import Tx
from refcore_sqlstore import SqlStore
from refcore_sqlstore.engine import SQLITE_BUSY_TIMEOUT_SECONDS, normalise_url
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.tables import organizations
from tests.contract.scenario import build_world
from tests.sqlstore.raw import count, engine_of
from tests.stores import fresh_sqlite_store, psycopg_connect

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _user(number: int) -> User:
    return User(id=f"usr_{number:04d}", email=f"user{number}@example.com", created_at=NOW)


def test_writes_are_invisible_to_others_until_commit(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.users.add(_user(1))
        assert uow.users.get("usr_0001") == _user(1)
        # Another connection (a raw one: on SQLite a second unit of work would queue on the lock).
        assert count(sql_store, "users") == 0
        uow.commit()
        assert count(sql_store, "users") == 1


def test_leaving_without_commit_discards_every_write(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.users.add(_user(1))
        uow.organizations.add(Organization(id="org_1", name="Acme", created_at=NOW))
    with pytest.raises(RuntimeError), sql_store.unit_of_work() as uow:
        uow.users.add(_user(2))
        raise RuntimeError("the work failed")
    assert count(sql_store, "users") == 0
    assert count(sql_store, "organizations") == 0


def test_writes_after_a_commit_need_their_own_commit(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.users.add(_user(1))
        uow.commit()
        uow.users.add(_user(2))
    assert count(sql_store, "users") == 1


def test_rollback_discards_and_the_unit_of_work_goes_on(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.users.add(_user(1))
        uow.rollback()
        uow.users.add(_user(2))
        uow.commit()
    assert count(sql_store, "users", id="usr_0002") == 1
    assert count(sql_store, "users") == 1


def test_replace_of_a_missing_record_is_a_key_error(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow, pytest.raises(KeyError):
        uow.users.replace(_user(1))


def test_queries_filter_by_equality_and_null_and_order_by_id(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        for number in (3, 1, 2):
            uow.users.add(_user(number))
        uow.commit()
    with sql_store.unit_of_work() as uow:
        assert [u.id for u in uow.users.find_all({})] == ["usr_0001", "usr_0002", "usr_0003"]
        assert uow.users.find_one({"email": "user2@example.com"}) == _user(2)
        assert uow.users.find_one({"email": "nobody@example.com"}) is None
        assert [u.id for u in uow.users.page({}, limit=2, before=None)] == ["usr_0003", "usr_0002"]
        assert [u.id for u in uow.users.page({}, limit=5, before="usr_0002")] == ["usr_0001"]


def test_datetimes_come_back_aware_in_utc_and_compare_in_time_order(sql_store: SqlStore) -> None:
    """SQLite has no time type: values are stored as UTC text and must still order by time."""
    plus_two = timezone(timedelta(hours=2))
    earlier = datetime(2026, 1, 1, 1, 30, tzinfo=plus_two)  # 2025-12-31 23:30 UTC
    later = datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    with sql_store.unit_of_work() as uow:
        uow.organizations.add(Organization(id="org_a", name="a", created_at=later))
        uow.organizations.add(Organization(id="org_b", name="b", created_at=earlier))
        uow.commit()
    with sql_store.unit_of_work() as uow:
        stored = uow.organizations.get("org_b")
    assert stored is not None
    assert stored.created_at == earlier
    assert stored.created_at.utcoffset() == timedelta(0)
    with engine_of(sql_store).connect() as connection:
        by_time = select(organizations.c.id).order_by(organizations.c.created_at)
        assert connection.execute(by_time).scalars().all() == ["org_b", "org_a"]
        not_after = select(organizations.c.id).where(
            organizations.c.created_at <= datetime(2025, 12, 31, 23, 30, tzinfo=UTC)
        )
        assert connection.execute(not_after).scalars().all() == ["org_b"]


def test_json_fields_round_trip(sql_store: SqlStore) -> None:
    rt = sql_store.runtime(clock=ManualClock())
    world = build_world(rt, ManualClock())
    data = {"id": "x_1", "nested": {"list": [1, None, "two", True], "empty": {}}, "amount": 2**31 - 1}

    def emit(tx: Tx) -> Event:
        return tx.emit(EventType.WEBHOOK_TEST, app_id=world.app.id, livemode=False, data=data)

    event = rt.transaction(emit)
    assert rt.read(lambda tx: tx.uow.events.get(event.id)) == event
    assert list(rt.read(lambda tx: tx.uow.events.get(event.id)).data) == ["id", "nested", "amount"]


def test_naive_datetimes_are_refused(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow, pytest.raises(InternalError):
        uow.users.add(User(id="usr_1", email="a@example.com", created_at=datetime(2026, 1, 1)))


# -- locks -----------------------------------------------------------------------------------


def _postgres_url(store: SqlStore) -> str:
    return engine_of(store).url.render_as_string(hide_password=False)


def _locked_by_another_transaction(store: SqlStore, user_id: str) -> bool:
    with psycopg_connect(_postgres_url(store)) as connection:
        try:
            connection.execute("SELECT id FROM users WHERE id = %s FOR UPDATE NOWAIT", (user_id,))
        except psycopg.errors.LockNotAvailable:
            return True
        return False


@pytest.mark.parametrize("sql_store", ["postgres"], indirect=True)
def test_for_update_locks_the_row_until_the_unit_of_work_ends(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.users.add(_user(1))
        uow.commit()
    with sql_store.unit_of_work() as uow:
        uow.users.get("usr_0001")
        assert not _locked_by_another_transaction(sql_store, "usr_0001")
        uow.users.get("usr_0001", for_update=True)
        assert _locked_by_another_transaction(sql_store, "usr_0001")
    assert not _locked_by_another_transaction(sql_store, "usr_0001")
    with sql_store.unit_of_work() as uow:
        uow.users.find_one({"email": "user1@example.com"}, for_update=True)
        assert _locked_by_another_transaction(sql_store, "usr_0001")


def _sqlite_path(store: SqlStore) -> str:
    database = engine_of(store).url.database
    assert database is not None
    return database


def _can_take_the_write_lock(path: str) -> bool:
    connection = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError as error:
        assert "locked" in str(error)
        return False
    finally:
        connection.close()


def test_on_sqlite_a_unit_of_work_holds_the_write_lock_from_its_start() -> None:
    with fresh_sqlite_store() as store:
        path = _sqlite_path(store)
        assert _can_take_the_write_lock(path)
        with store.unit_of_work():
            assert not _can_take_the_write_lock(path)
        assert _can_take_the_write_lock(path)


def test_on_sqlite_every_connection_has_wal_foreign_keys_a_busy_timeout_and_memory_temp_files() -> None:
    """``temp_store = MEMORY`` (2): a writer's savepoint journal is not a file made per write."""
    with fresh_sqlite_store() as store:
        engine = engine_of(store)
        connections = [engine.connect() for _ in range(3)]
        try:
            for connection in connections:
                driver = connection.connection.dbapi_connection
                assert driver is not None
                settings = [
                    driver.execute(f"PRAGMA {name}").fetchone()[0]
                    for name in ("journal_mode", "foreign_keys", "busy_timeout", "temp_store")
                ]
                assert settings == ["wal", 1, int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000), 2]
        finally:
            for connection in connections:
                connection.close()


def test_postgres_urls_use_the_psycopg_3_driver() -> None:
    for url in ("postgresql://u@h/db", "postgres://u@h/db", "postgresql+psycopg://u@h/db"):
        assert normalise_url(url).drivername == "postgresql+psycopg"
    assert make_url("sqlite:///x.db").drivername == "sqlite"


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "mysql://h/db", "not a url"])
def test_unsupported_urls_are_refused_without_echoing_them(url: str) -> None:
    with pytest.raises(ValueError) as refused:
        SqlStore(url)
    assert url not in str(refused.value) or url == "sqlite://"


def test_an_unreachable_database_is_an_internal_error_without_the_password() -> None:
    store = SqlStore("postgresql://refcore:s3cret-pw@127.0.0.1:1/refcore")
    try:
        with pytest.raises(InternalError) as failed:
            store.migrate()
        assert "s3cret-pw" not in str(failed.value)
        with pytest.raises(InternalError), store.unit_of_work():
            pass
    finally:
        store.dispose()


@pytest.mark.parametrize(
    ("raised", "becomes"),
    [
        (sqlite3.OperationalError("database is locked"), ConcurrentWrite),
        (sqlite3.IntegrityError("UNIQUE constraint failed: users.email"), ConcurrentWrite),
        (sqlite3.OperationalError("disk I/O error"), InternalError),
        (psycopg.errors.DeadlockDetected("deadlock detected"), ConcurrentWrite),
        (psycopg.OperationalError("server closed the connection unexpectedly"), InternalError),
    ],
    ids=["sqlite-locked", "sqlite-unique", "sqlite-io", "postgres-deadlock", "postgres-gone"],
)
def test_errors_the_driver_raises_itself_become_core_errors_too(raised: Exception, becomes: type) -> None:
    """BEGIN and the group commit's savepoints go straight to the driver, so its errors arrive
    unwrapped by SQLAlchemy; they must be translated all the same, naming nothing stored."""
    with pytest.raises(becomes) as caught, database_errors():
        raise raised
    assert caught.value.__cause__ is raised
    assert "users" not in str(caught.value) and "email" not in str(caught.value)


def test_errors_that_are_not_the_databases_pass_through_untranslated() -> None:
    """Only database errors are translated: a core error or a bug inside the block keeps its
    own type, and a block that raises nothing returns normally (one shared context manager)."""
    refused = ConcurrentWrite("already the core's")
    with pytest.raises(ConcurrentWrite) as caught, database_errors():
        raise refused
    assert caught.value is refused
    with pytest.raises(KeyError), database_errors():
        raise KeyError("a bug")
    with database_errors(), database_errors():
        pass
