"""The repository's statements run on the driver (``refcore_sqlstore.driver``) send the SQL and
parameters SQLAlchemy's own path would, and read and write the same values, type by type."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from sqlalchemy import Connection, bindparam, select
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.dialects.postgresql import psycopg as psycopg_dialect
from sqlalchemy.exc import StatementError

from refcore.clocks import ManualClock
from refcore.errors import InternalError
from refcore.models import DisputeStatus, Event, EventType
from refcore.services import payouts
from refcore_sqlstore import SqlStore
from refcore_sqlstore.driver import DriverStatement, compiled_for
from refcore_sqlstore.id_lists import in_id_list
from refcore_sqlstore.repository import SqlRepository
from refcore_sqlstore.statements import TableStatements, statements_of
from refcore_sqlstore.tables import clicks, commission_entries, events, metadata, payments
from refcore_sqlstore.unit_of_work import MODELS, mappers
from tests.contract.scenario import build_world
from tests.sqlstore.raw import engine_of, recorded_statements
from tests.stores import emptied_postgres_store, psycopg_connect

NOW = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def _history(store: SqlStore) -> str:
    """Rows in most tables, of every column type; the App's ID."""
    clock = ManualClock()
    world = build_world(store.runtime(clock=clock), clock, hold_days=0)
    customer = world.referred_customer()
    world.identify(world.capture(), email="by-email@example.com")
    world.pay(customer, 10_000, payment_id="pay_1")
    world.refund("pay_1", 1_000, refund_id="re_1")
    world.dispute("dp_1", "pay_1", DisputeStatus.OPENED, 1_000)
    world.dispute("dp_1", "pay_1", DisputeStatus.WON, 1_000)
    payouts.mark_paid(world.rt, world.session, world.affiliate.id)
    return world.app.id


def _typed(rows: list[dict[str, Any]]) -> list[dict[str, tuple[type, Any]]]:
    """Rows with each value's type beside it: ``1 == True`` must not pass for a boolean."""
    return [{name: (type(value), value) for name, value in row.items()} for row in rows]


def test_rows_read_on_the_driver_equal_sqlalchemys_for_every_table(sql_store: SqlStore) -> None:
    _history(sql_store)
    tables_with_rows = 0
    with engine_of(sql_store).connect() as connection:
        for name in sorted(MODELS):
            table = metadata.tables[name]
            statement = select(table).order_by(table.c.id)
            expected = [dict(row) for row in connection.execute(statement).mappings()]
            on_driver = DriverStatement(statement, connection.dialect).fetch(connection, {})
            assert _typed(on_driver) == _typed(expected), name
            tables_with_rows += bool(expected)
    assert tables_with_rows >= 15  # the history reached most tables, so most column types were compared


def test_a_row_written_on_the_driver_reads_back_through_sqlalchemy_value_for_value(
    sql_store: SqlStore,
) -> None:
    app_id = _history(sql_store)
    data = {"nested": {"list": [1, 2.5, "x", None, True]}, "unicode": "é😀"}
    written = Event(
        id="whev_driver",
        app_id=app_id,
        type=EventType.WEBHOOK_TEST,
        livemode=False,
        created_at=NOW,
        data=data,
    )
    with sql_store.unit_of_work() as uow:
        uow.events.add(written)
        uow.commit()
    with engine_of(sql_store).connect() as connection:
        row = connection.execute(select(events).where(events.c.id == "whev_driver")).mappings().one()
    assert row["created_at"] == NOW and row["created_at"].tzinfo is not None
    assert row["data"] == data
    assert row["livemode"] is False
    assert row["type"] == EventType.WEBHOOK_TEST.value


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda s: (s.by_id(for_update=True), TableStatements.id_param("pay_1")), id="by id, locked"
        ),
        pytest.param(
            lambda s: (
                s.one(TableStatements.shape({"app_id": "x", "mode": None}), for_update=False),
                TableStatements.params({"app_id": "x", "mode": None}),
            ),
            id="one, with a NULL",
        ),
        pytest.param(
            lambda s: (
                s.page(TableStatements.shape({"app_id": "x"}), limit=26, before=True),
                {**TableStatements.params({"app_id": "x"}), **TableStatements.before_param("pay_9")},
            ),
            id="page before a cursor",
        ),
    ],
)
def test_the_sql_and_parameters_sent_are_sqlalchemys(sql_store: SqlStore, build: Any) -> None:
    engine = engine_of(sql_store)
    statements = statements_of(payments, engine.dialect)
    driver_statement, params = build(statements)
    with recorded_statements(sql_store) as sent, engine.connect() as connection:
        driver_statement.fetch(connection, params)
        connection.execute(driver_statement.statement, params).all()
    assert len(sent) == 2
    assert sent[0] == sent[1]


def test_an_update_sends_only_the_columns_given(sql_store: SqlStore) -> None:
    engine = engine_of(sql_store)
    update = statements_of(commission_entries, engine.dialect).update_by_id(["currency"])
    assert "currency" in update.sql and "amount" not in update.sql


def test_a_statement_rendered_at_each_execution_is_refused(sql_store: SqlStore) -> None:
    by_ids = select(payments.c.id).where(payments.c.id.in_(bindparam("ids", expanding=True)))
    with pytest.raises(ValueError, match="rendered at each execution"):
        DriverStatement(by_ids, engine_of(sql_store).dialect)


def test_a_statement_outside_a_transaction_begins_one_so_commit_commits(sql_store: SqlStore) -> None:
    app_id = _history(sql_store)
    event_ = Event(
        id="whev_2", app_id=app_id, type=EventType.WEBHOOK_TEST, livemode=True, created_at=NOW, data={}
    )
    with engine_of(sql_store).connect() as connection:
        connection.begin()
        connection.rollback()
        assert not connection.in_transaction()
        SqlRepository(connection, mappers()["events"]).add(event_)
        assert connection.in_transaction()
        connection.commit()
    with sql_store.read_unit_of_work() as uow:
        assert uow.events.get("whev_2") == event_


@pytest.fixture
def postgres_store() -> Iterator[SqlStore]:
    """PostgreSQL alone: a server connection can be terminated from outside."""
    with emptied_postgres_store() as store:
        yield store


def test_a_lost_postgresql_connection_is_invalidated_and_the_next_unit_of_work_reconnects(
    postgres_store: SqlStore,
) -> None:
    sql_store = postgres_store
    engine = engine_of(sql_store)
    with sql_store.unit_of_work() as uow:
        connection: Connection = uow._require_connection()
        uow.users.get("usr_none")
        pid = connection.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]
        with psycopg_connect(engine.url.render_as_string(hide_password=False)) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(InternalError):
            uow.users.get("usr_none")
        assert connection.invalidated
    with sql_store.unit_of_work() as uow:
        assert uow.users.get("usr_none") is None


ODD_IDS = ["whev_a", "whev_'quoted'", 'whev_"double"', "whev_é😀", "whev_,comma", "whev_[1]"]


def _ids_found_by_list(sql_store: SqlStore, stored: list[str], wanted: list[str]) -> list[str]:
    """Store events with the ``stored`` IDs, then select those whose ID is in ``wanted``, the
    list bound as one parameter."""
    app_id = _history(sql_store)
    with sql_store.unit_of_work() as uow:
        for id in stored:
            uow.events.add(
                Event(
                    id=id, app_id=app_id, type=EventType.WEBHOOK_TEST, livemode=True, created_at=NOW, data={}
                )
            )
        uow.commit()
    engine = engine_of(sql_store)
    statement = select(events.c.id).where(in_id_list(events.c.id, "ids"))
    with engine.connect() as connection:
        found = compiled_for(statement, engine.dialect).fetch_tuples(connection, {"ids": wanted})
    return sorted(id for (id,) in found)


@pytest.mark.parametrize(
    "wanted",
    [["whev_a"], ODD_IDS, ["whev_missing"], ["whev_a", "whev_a", "whev_missing"], ODD_IDS[1:4]],
    ids=["one", "every odd one", "none stored", "repeated and missing", "some"],
)
def test_an_id_list_bound_as_one_parameter_matches_exactly_its_ids(
    sql_store: SqlStore, wanted: list[str]
) -> None:
    assert _ids_found_by_list(sql_store, ODD_IDS, wanted) == sorted(set(wanted) & set(ODD_IDS))


AWKWARD_IDS = ['whev_a"b', "whev_c\\d", "whev_e,f", "whev_{g}", " whev h ", "NULL", 'whev_"}']


def test_ids_with_quotes_backslashes_commas_braces_and_spaces_stay_one_element_each(
    sql_store: SqlStore,
) -> None:
    """PostgreSQL gets the list as array text (``refcore_sqlstore.id_lists.text_array``): each
    ID must arrive whole, whatever characters it holds."""
    stored = [*AWKWARD_IDS, "whev_ab", "whev_cd", "whev_g"]
    assert _ids_found_by_list(sql_store, stored, AWKWARD_IDS) == sorted(AWKWARD_IDS)


def test_a_statement_compiled_for_one_dialect_is_reused(sql_store: SqlStore) -> None:
    dialect = engine_of(sql_store).dialect
    statement = select(events.c.id).where(in_id_list(events.c.id, "ids"))
    assert compiled_for(statement, dialect) is compiled_for(statement, dialect)


def test_a_bind_name_the_paramstyle_would_rename_is_refused() -> None:
    by_odd_name = select(events.c.id).where(events.c.id == bindparam("id%s"))
    with pytest.raises(ValueError, match="need escaping"):
        DriverStatement(by_odd_name, psycopg_dialect.dialect())


def _sent(statement: DriverStatement, parameters: Any) -> dict[str, Any]:
    """The parameters a statement sends, by name, for positional and named paramstyles alike."""
    if isinstance(parameters, tuple):
        return dict(zip(statement._names, parameters, strict=True))
    return dict(parameters)


def test_an_insert_takes_its_values_from_the_row_alone(sql_store: SqlStore) -> None:
    """A column an ``INSERT`` sets is a required bind: its value comes from the row, nothing of
    the statement's own is merged in, and the caller's row is left as it was."""
    dialect = engine_of(sql_store).dialect
    insert = statements_of(clicks, dialect).insert
    row: dict[str, Any] = {column.name: f"value of {column.name}" for column in clicks.c}
    row["created_at"] = NOW
    sent = _sent(insert, insert.parameters(row))
    assert sent.keys() == row.keys()
    assert {name: value for name, value in sent.items() if name != "created_at"} == {
        name: value for name, value in row.items() if name != "created_at"
    }
    assert row["created_at"] is NOW  # the type's processor wrote the copy sent, not the row


@pytest.mark.parametrize(
    ("query", "params", "expected"),
    [
        pytest.param(
            select(events.c.id).where(events.c.id == bindparam("one")), {"one": "x"}, ("x",), id="one"
        ),
        pytest.param(
            select(events.c.id).where(events.c.id.between(bindparam("low"), bindparam("high"))),
            {"high": "z", "low": "a"},
            ("a", "z"),
            id="two, given out of order",
        ),
        pytest.param(select(events.c.id), {}, (), id="none"),
    ],
)
def test_positional_parameters_are_a_tuple_in_the_statements_order_however_many(
    query: Any, params: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    """SQLite's paramstyle is positional: one bind or none is still a tuple, not the bare value."""
    assert DriverStatement(query, sqlite_dialect.dialect()).parameters(params) == expected


def test_a_row_missing_a_column_is_refused_naming_it_before_the_driver_sees_it() -> None:
    insert = TableStatements(clicks, sqlite_dialect.dialect()).insert
    row: dict[str, Any] = {column.name: "x" for column in clicks.c if column.name != "link_id"}
    row["created_at"] = NOW
    with pytest.raises(StatementError, match="no value for bind 'link_id'"):
        insert.parameters(row)


def test_a_bind_with_a_value_of_its_own_is_filled_in_and_may_be_overridden(sql_store: SqlStore) -> None:
    dialect = engine_of(sql_store).dialect
    query = select(events.c.id).where(events.c.id > bindparam("after")).limit(25)
    limited = DriverStatement(query, dialect)
    assert 25 in _sent(limited, limited.parameters({"after": "x"})).values()
    own = {name: 5 for name in limited._constants}
    overridden = _sent(limited, limited.parameters({"after": "x", **own}))
    assert 25 not in overridden.values() and overridden["after"] == "x"


@pytest.mark.parametrize("count", [1, 3, 32, 100])
@pytest.mark.parametrize("order", ["the table's", "reversed"])
def test_rows_given_as_values_are_stored_as_the_same_rows_given_by_name(
    sql_store: SqlStore, order: str, count: int
) -> None:
    """``add_rows`` stores what ``send_many`` stores for the same rows: on SQLite, with the
    table's columns in order, by multi-row inserts of a power of two rows each (100: 64, 32,
    4); by name in one ``executemany`` on PostgreSQL or for columns in another order."""
    _history(sql_store)
    engine = engine_of(sql_store)
    statements = statements_of(clicks, engine.dialect)
    columns = tuple(column.name for column in clicks.c)
    if order == "reversed":
        columns = columns[::-1]
    with engine.connect() as connection:
        existing = dict(connection.execute(select(clicks).limit(1)).mappings().one())
    rows = [
        existing | {"id": f"clk_sent_{n:03}", "page": f"page {n}", "created_at": NOW} for n in range(count)
    ]
    stored = []
    with recorded_statements(sql_store, lambda sql: "INSERT" in sql) as sent, engine.connect() as connection:
        for send in (
            lambda: statements.insert.send_many(connection, rows),
            lambda: statements.add_rows(connection, columns, [[row[c] for c in columns] for row in rows]),
        ):
            send()
            query = select(clicks).where(clicks.c.id.like("clk_sent_%")).order_by(clicks.c.id)
            stored.append([dict(row) for row in connection.execute(query).mappings()])
            connection.rollback()
    assert stored[0] == stored[1] == [row | {"created_at": NOW} for row in rows]
    by_values = sent[1:]
    if engine.dialect.name == "sqlite" and order == "the table's":
        runs = [len(parameters) // len(columns) for _sql, parameters in by_values]
        assert runs == [run for run in (64, 32, 16, 8, 4, 2, 1) if count & run]
    else:
        assert len(by_values) == 1 and by_values[0] == sent[0]


def test_a_value_its_type_refuses_is_refused_naming_its_bind_when_given_by_position(
    sql_store: SqlStore,
) -> None:
    engine = engine_of(sql_store)
    statements = statements_of(clicks, engine.dialect)
    columns = tuple(column.name for column in clicks.c)
    naive = NOW.replace(tzinfo=None)
    values = [naive if column == "created_at" else "x" for column in columns]
    with engine.connect() as connection, pytest.raises(StatementError, match="bind 'created_at"):
        statements.add_rows(connection, columns, [values])


def test_a_statement_taking_parameters_by_name_refuses_values() -> None:
    insert = TableStatements(clicks, psycopg_dialect.dialect()).insert
    assert not insert.takes_values
    with pytest.raises(TypeError, match="by name"):
        insert.send_values(cast(Connection, None), ["x"])
