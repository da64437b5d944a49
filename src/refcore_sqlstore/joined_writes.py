"""PostgreSQL: a unit of work's deferred writes sent as one statement.

A payment's commit sends four ``INSERT``s (the payment, its commission entry, two events) and
the ``COMMIT`` in one pipeline (:mod:`refcore_sqlstore.postgres_round_trips`): one round trip,
but psycopg still does a statement's whole work for each, converting its query, dumping its
parameters, preparing and sending it and reading its result. Four one-row inserts in a pipeline
took 565 µs of client CPU against 300 µs for the same rows as one statement (a throwaway probe,
pinned to one CPU; ``bench/history.md``, twenty-seventh session).

So consecutive deferred writes go as one statement of data-modifying ``WITH`` clauses::

    WITH refcore_i0 AS (INSERT INTO refunds ...), refcore_i1 AS (UPDATE payments SET ...)
    INSERT INTO commission_entries ...

What PostgreSQL does with it is what it did with the separate statements, in one command:

- every sub-statement runs to completion, whether or not the statement reads its output;
- unique constraints are checked per row, so a duplicate key fails the statement with the same
  error as before (a lost race, ``ConcurrentWrite``), and nothing of it is kept;
- ``AFTER`` triggers (the balance projection's, on a commission entry) fire once the whole
  statement is done, in a command of their own, so they see every row the statement wrote,
  as they saw the rows of the statements before them; refcore's foreign keys are checked at
  ``COMMIT`` (``DEFERRABLE INITIALLY DEFERRED``);
- no insert reads a table another one writes (they are ``VALUES`` lists), so that the
  sub-statements share one snapshot changes nothing for them.

An ``UPDATE`` joins only under rules of its own, because the shared snapshot and the triggers'
timing would otherwise change what it does:

- it is an update by ``id`` of a row this transaction has locked (``SELECT … FOR UPDATE``;
  only :meth:`~refcore_sqlstore.repository.SqlRepository.replace` of such a row defers one),
  so the row existed before the statement began: an ``UPDATE`` in a ``WITH`` does not see rows
  inserted by the same statement, and its locked row can neither vanish nor change under it;
- one row is updated at most once a statement (PostgreSQL applies only one of two updates of a
  row in one statement): a second update of it starts a new statement;
- it sets no column a trigger watches or reads (:data:`refcore_sqlstore.tables.TRIGGER_COLUMNS`):
  a dispute's change of its payment's ``open_dispute_count`` moves the payment's entries
  between balance buckets in a trigger, and joined with the inserts of those entries the
  trigger would see them and move them too. Such an update goes as a statement of its own,
  still in the round trip of the statement after it.

Statements sent with ``executemany`` and anything but these (``BEGIN``, ``COMMIT``, savepoints,
an upsert) go as they are. A joined statement keeps under PostgreSQL's limit of 65,535
parameters by starting a new one at :data:`MAX_PARAMETERS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from refcore_sqlstore.tables import TRIGGER_COLUMNS

#: One deferred statement: SQL text, parameters (a list of them for ``executemany``), ``many``.
Deferred = tuple[str, Any, bool]

#: Parameters of one joined statement at most (PostgreSQL refuses more than 65,535).
MAX_PARAMETERS = 30_000

#: The parameter an update by ``id`` names its row with (``TableStatements.update_by_id``).
UPDATED_ID = "refcore_id"

_NAMED = re.compile(r"%\((\w+)\)s")
_PLAIN_INSERT = re.compile(r"INSERT INTO \w+ \([^)]*\) VALUES \(")
_CAST = r'(?:::[A-Z]+(?: [A-Z]+)*(?: COLLATE "\w+")?)?'
_ASSIGNMENT = rf"(\w+)=%\(\w+\)s{_CAST}"
_UPDATE_BY_ID = re.compile(
    rf"UPDATE (\w+) SET ({_ASSIGNMENT}(?:, {_ASSIGNMENT})*) WHERE \1\.id = %\({UPDATED_ID}\)s{_CAST}"
)


class _Run:
    """Consecutive joinable writes, and what decides where the next one must start anew."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, Mapping[str, Any]]] = []
        self.width = 0
        self.updated: set[tuple[str, Any]] = set()

    def takes(self, names: Sequence[str], updated: tuple[str, Any] | None) -> bool:
        if self.writes and self.width + len(names) > MAX_PARAMETERS:
            return False
        return updated is None or updated not in self.updated

    def add(
        self, sql: str, parameters: Mapping[str, Any], names: Sequence[str], updated: tuple[str, Any] | None
    ) -> None:
        self.writes.append((sql, parameters))
        self.width += len(names)
        if updated is not None:
            self.updated.add(updated)


def joined(pending: Sequence[Deferred]) -> Iterator[Deferred]:
    """``pending`` in order, with each run of two or more joinable writes in one statement."""
    run = _Run()
    for deferred in pending:
        sql, parameters, many = deferred
        joinable = None if many or not isinstance(parameters, Mapping) else _joinable(sql)
        if joinable is None:
            yield from _flushed(run)
            run = _Run()
            yield deferred
            continue
        _, names, table = joinable
        updated = None if table is None else (table, parameters[UPDATED_ID])
        if not run.takes(names, updated):
            yield from _flushed(run)
            run = _Run()
        run.add(sql, parameters, names, updated)
    yield from _flushed(run)


def _flushed(run: _Run) -> Iterator[Deferred]:
    if len(run.writes) == 1:
        yield run.writes[0][0], run.writes[0][1], False
    elif run.writes:
        sql, parts = _statement(tuple(sql for sql, _ in run.writes))
        values = [
            parameters[name]
            for (_, parameters), names in zip(run.writes, parts, strict=True)
            for name in names
        ]
        yield sql, values, False


@lru_cache(maxsize=256)
def _joinable(sql: str) -> tuple[str, tuple[str, ...], str | None] | None:
    """A plain ``INSERT … VALUES`` or an update by ``id`` that may join (see the module's
    rules) with its named placeholders made positional, their names in order, and the updated
    table (``None`` for an insert); ``None`` for any other statement. An upsert is left alone:
    two of the same row in one statement fail (``ON CONFLICT DO UPDATE`` cannot affect a row
    a second time)."""
    names = tuple(_NAMED.findall(sql))
    if _PLAIN_INSERT.match(sql) and "ON CONFLICT" not in sql and "RETURNING" not in sql:
        return _NAMED.sub("%s", sql), names, None
    update = _UPDATE_BY_ID.fullmatch(sql)
    if update is None:
        return None
    table = update.group(1)
    assigned = set(re.findall(_ASSIGNMENT, update.group(2)))
    if assigned & TRIGGER_COLUMNS.get(table, frozenset()):
        return None
    return _NAMED.sub("%s", sql), names, table


@lru_cache(maxsize=256)
def _statement(sqls: tuple[str, ...]) -> tuple[str, tuple[tuple[str, ...], ...]]:
    """The joined statement of ``sqls``, and each one's parameter names in the order it takes."""
    parts = []
    for sql in sqls:
        part = _joinable(sql)
        assert part is not None, "only joinable writes are joined"
        parts.append(part)
    clauses = ", ".join(f"refcore_i{index} AS ({sql})" for index, (sql, _, _) in enumerate(parts[:-1]))
    return f"WITH {clauses} {parts[-1][0]}", tuple(names for _, names, _ in parts)
