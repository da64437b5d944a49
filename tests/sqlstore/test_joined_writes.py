"""How deferred writes are joined into one statement (refcore_sqlstore.joined_writes), as text
and parameters; what PostgreSQL makes of the joined statement is tested in
``tests/sqlstore/test_postgres_round_trips.py``."""

from __future__ import annotations

import pytest

from refcore_sqlstore import SqlStore, joined_writes
from refcore_sqlstore.joined_writes import TRIGGER_COLUMNS, joined

USER = "INSERT INTO users (id, email) VALUES (%(id)s::VARCHAR, %(email)s::VARCHAR)"
EVENT = "INSERT INTO events (id, data) VALUES (%(id)s, %(data)s::JSON)"
BEGIN = ("BEGIN ISOLATION LEVEL READ COMMITTED", None, False)
COMMIT = ("COMMIT", None, False)


def test_consecutive_inserts_become_one_statement_with_their_values_in_order() -> None:
    pending = [
        BEGIN,
        (USER, {"id": "usr_1", "email": "a@example.com"}, False),
        (EVENT, {"data": "{}", "id": "whev_1"}, False),
        (USER, {"email": "b@example.com", "id": "usr_2"}, False),
        COMMIT,
    ]
    sent = list(joined(pending))

    assert sent[0] == BEGIN and sent[-1] == COMMIT
    sql, values, many = sent[1]
    assert sql == (
        "WITH refcore_i0 AS (INSERT INTO users (id, email) VALUES (%s::VARCHAR, %s::VARCHAR)), "
        "refcore_i1 AS (INSERT INTO events (id, data) VALUES (%s, %s::JSON)) "
        "INSERT INTO users (id, email) VALUES (%s::VARCHAR, %s::VARCHAR)"
    )
    assert values == ["usr_1", "a@example.com", "whev_1", "{}", "usr_2", "b@example.com"]
    assert many is False


def test_a_lone_insert_and_everything_else_go_as_they_are() -> None:
    """``BEGIN``, savepoints and ``executemany`` break a run of inserts; a run of one is not
    rewritten."""
    lone = (USER, {"id": "usr_1", "email": "a@example.com"}, False)
    rows = [{"id": "usr_2", "email": "b@example.com"}, {"id": "usr_3", "email": "c@example.com"}]
    many = (USER, rows, True)
    savepoint = ("SAVEPOINT member_1", None, False)
    pending = [BEGIN, lone, savepoint, lone, many, lone, COMMIT]

    assert list(joined(pending)) == pending


def test_a_joined_statement_stays_under_postgresqls_parameter_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(joined_writes, "MAX_PARAMETERS", 4)
    rows = [(USER, {"id": f"usr_{n}", "email": f"{n}@example.com"}, False) for n in range(5)]
    sent = list(joined(rows))

    assert [len(values) for _, values, _ in sent] == [4, 4, 2]  # two rows of two, two, then one
    assert sent[-1] == rows[-1]  # the last one alone, unchanged
    assert [value for _, values, _ in sent[:2] for value in values][::2] == [f"usr_{n}" for n in range(4)]


def test_a_placeholder_used_twice_is_given_twice() -> None:
    twice = "INSERT INTO pairs (a, b) VALUES (%(x)s, %(x)s)"
    pending = [(twice, {"x": 1}, False), (twice, {"x": 2}, False)]
    ((sql, values, _),) = list(joined(pending))

    assert sql.count("%s") == 4
    assert values == [1, 1, 2, 2]


@pytest.mark.parametrize(
    "other",
    [
        "INSERT INTO users (id, email) VALUES (%(id)s, %(email)s) ON CONFLICT (id) DO NOTHING",
        "INSERT INTO users (id, email) VALUES (%(id)s, %(email)s) RETURNING id",
        "INSERT INTO users (id, email) SELECT %(id)s, %(email)s",
        "UPDATE users SET email = %(email)s WHERE id = %(id)s",
        'UPDATE users SET email=%(email)s WHERE users.email = %(refcore_id)s::VARCHAR COLLATE "C"',
        "UPDATE users SET email=%(email)s WHERE users.id = %(refcore_id)s RETURNING id",
        "UPDATE users SET email=(SELECT max(email) FROM users) WHERE users.id = %(refcore_id)s",
    ],
)
def test_only_plain_inserts_of_values_and_updates_by_id_are_joined(other: str) -> None:
    """An upsert of the same row twice in one statement would fail; an insert from a query
    would read what its neighbours write in the same statement's snapshot; an update joins
    only as ``TableStatements.update_by_id`` writes it: plain values, one row by its id."""
    row = {"id": "usr_1", "email": "a@example.com"}
    pending = [(USER, row, False), (other, row, False), (USER, row, False)]

    assert list(joined(pending)) == pending


UPDATE_USER = 'UPDATE users SET email=%(email)s::VARCHAR WHERE users.id = %(refcore_id)s::VARCHAR COLLATE "C"'


def test_an_update_by_id_joins_the_inserts_around_it() -> None:
    pending = [
        (USER, {"id": "usr_2", "email": "b@example.com"}, False),
        (UPDATE_USER, {"email": "new@example.com", "refcore_id": "usr_1"}, False),
        (EVENT, {"id": "whev_1", "data": "{}"}, False),
    ]
    ((sql, values, _),) = list(joined(pending))

    assert sql == (
        "WITH refcore_i0 AS (INSERT INTO users (id, email) VALUES (%s::VARCHAR, %s::VARCHAR)), "
        'refcore_i1 AS (UPDATE users SET email=%s::VARCHAR WHERE users.id = %s::VARCHAR COLLATE "C") '
        "INSERT INTO events (id, data) VALUES (%s, %s::JSON)"
    )
    assert values == ["usr_2", "b@example.com", "new@example.com", "usr_1", "whev_1", "{}"]


def test_a_second_update_of_a_row_starts_a_new_statement() -> None:
    """PostgreSQL would apply only one of two updates of one row in one statement."""
    first = (UPDATE_USER, {"email": "a@example.com", "refcore_id": "usr_1"}, False)
    other_row = (UPDATE_USER, {"email": "b@example.com", "refcore_id": "usr_2"}, False)
    again = (UPDATE_USER, {"email": "c@example.com", "refcore_id": "usr_1"}, False)
    insert = (USER, {"id": "usr_3", "email": "d@example.com"}, False)
    sent = list(joined([first, other_row, insert, again, insert]))

    assert [values for _, values, _ in sent] == [
        ["a@example.com", "usr_1", "b@example.com", "usr_2", "usr_3", "d@example.com"],
        ["c@example.com", "usr_1", "usr_3", "d@example.com"],
    ]


@pytest.mark.parametrize(
    ("table", "column"), [(t, c) for t, cs in TRIGGER_COLUMNS.items() for c in sorted(cs)]
)
def test_an_update_of_a_column_a_trigger_watches_is_never_joined(table: str, column: str) -> None:
    """A dispute's ``open_dispute_count`` moves its payment's entries between balance buckets
    in a trigger: joined with the inserts of new entries, it would move those too."""
    assignments = f"note=%(note)s, {column}=%({column})s::INTEGER"
    update = f"UPDATE {table} SET {assignments} WHERE {table}.id = %(refcore_id)s"
    entry = "INSERT INTO commission_entries (id, amount) VALUES (%(id)s, %(amount)s)"
    pending = [
        (entry, {"id": "ce_1", "amount": 5}, False),
        (update, {"note": "x", column: 1, "refcore_id": "row_1"}, False),
        (entry, {"id": "ce_2", "amount": 5}, False),
    ]

    assert list(joined(pending)) == pending


def test_every_update_trigger_of_the_schema_is_known(one_connection_postgres_store: SqlStore) -> None:
    """``TRIGGER_COLUMNS`` names every column an ``UPDATE`` trigger of the migrated schema
    watches; the only other update trigger refuses updates of the append-only ledger."""
    with one_connection_postgres_store._engine.connect() as connection:
        triggers = connection.exec_driver_sql(
            "SELECT t.event_object_table, t.trigger_name,"
            " array_remove(array_agg(c.event_object_column::text), NULL)"
            " FROM information_schema.triggers AS t"
            " LEFT JOIN information_schema.triggered_update_columns AS c"
            " ON c.trigger_name = t.trigger_name AND c.event_object_table = t.event_object_table"
            " WHERE t.event_manipulation = 'UPDATE' AND t.trigger_schema = current_schema()"
            " GROUP BY 1, 2"
        ).all()

    watched: dict[str, set[str]] = {}
    for table, _, columns in triggers:
        if table == "commission_entries":
            continue  # append-only: every update is refused, by the repository and the trigger
        assert columns, f"an update trigger on {table} fires whatever an update sets"
        watched.setdefault(table, set()).update(columns)
    assert watched == {table: set(columns) for table, columns in TRIGGER_COLUMNS.items()}
