"""How deferred inserts are joined into one statement (refcore_sqlstore.joined_inserts), as text
and parameters; what PostgreSQL makes of the joined statement is tested in
``tests/sqlstore/test_postgres_round_trips.py``."""

from __future__ import annotations

import pytest

from refcore_sqlstore import joined_inserts
from refcore_sqlstore.joined_inserts import joined

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
    monkeypatch.setattr(joined_inserts, "MAX_PARAMETERS", 4)
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
    ],
)
def test_only_plain_inserts_of_values_are_joined(other: str) -> None:
    """An upsert of the same row twice in one statement would fail; an insert from a query
    would read what its neighbours write in the same statement's snapshot."""
    row = {"id": "usr_1", "email": "a@example.com"}
    pending = [(USER, row, False), (other, row, False), (USER, row, False)]

    assert list(joined(pending)) == pending
