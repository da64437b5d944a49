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

- it is an update by ``id`` of a row this transaction has locked (``SELECT … FOR NO KEY UPDATE``;
  only :meth:`~refcore_sqlstore.repository.SqlRepository.replace` of such a row defers one),
  so the row existed before the statement began: an ``UPDATE`` in a ``WITH`` does not see rows
  inserted by the same statement, and its locked row can neither vanish nor change under it;
- one row is updated at most once a statement (PostgreSQL applies only one of two updates of a
  row in one statement): a second update of it starts a new statement;
- it sets no column a trigger watches or reads (:data:`TRIGGER_COLUMNS`):
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
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

#: One deferred statement: SQL text, parameters (a list of them for ``executemany``), ``many``.
Deferred = tuple[str, Any, bool]

#: Parameters of one joined statement at most (PostgreSQL refuses more than 65,535).
MAX_PARAMETERS = 30_000

#: By table, the columns the balance triggers (migrations 0004, 0005, 0009) watch (``AFTER
#: UPDATE OF``) or read from a row another statement writes: an update setting one is never
#: joined. (The payout sums' triggers read only the row they fire on, so joining would be safe
#: for them; their updates are rare, and one rule for every trigger is simpler to keep.)
#: ``tests/sqlstore/test_joined_writes.py`` checks the migrated schema's triggers watch nothing
#: else. (Kept here, not in :mod:`refcore_sqlstore.tables`: importing the tables this early, from
#: the driver's imports, cost identify and payment 1.3 to 3 % more instructions, though neither
#: runs the tables' code; ``bench/history.md``, thirtieth session.)
TRIGGER_COLUMNS: dict[str, frozenset[str]] = {
    "payments": frozenset({"open_dispute_count"}),
    "payout_items": frozenset({"active_entry_id"}),
    "payout_executions": frozenset({"status", "amount", "program_affiliate_id"}),
}

#: The parameter an update by ``id`` names its row with (``TableStatements.update_by_id``).
UPDATED_ID = "refcore_id"

_NAMED = re.compile(r"%\((\w+)\)s")
_PLAIN_INSERT = re.compile(r"INSERT INTO \w+ \([^)]*\) VALUES \(")
_CAST = r'(?:::[A-Z]+(?: [A-Z]+)*(?: COLLATE "\w+")?)?'
_ASSIGNMENT = rf"(\w+)=%\(\w+\)s{_CAST}"
_UPDATE_BY_ID = re.compile(
    rf"UPDATE (\w+) SET ({_ASSIGNMENT}(?:, {_ASSIGNMENT})*) WHERE \1\.id = %\({UPDATED_ID}\)s{_CAST}"
)


def joined(pending: Sequence[Deferred]) -> list[Deferred]:
    """``pending`` in order, with each run of two or more joinable writes in one statement.

    Every commit of a write on PostgreSQL passes through here, so it is a plain loop over
    tuples, with what each SQL text allows looked up once (``_joinable``)."""
    sent: list[Deferred] = []
    run: list[tuple[str, dict[str, Any]]] = []
    width = 0
    updated: set[tuple[str, Any]] = set()
    for deferred in pending:
        sql, parameters, many = deferred
        joinable = _joinable(sql) if not many and isinstance(parameters, dict) else None
        if joinable is None:
            _flush(run, sent)
            run, width = [], 0
            updated.clear()
            sent.append(deferred)
            continue
        names, table = joinable[1], joinable[2]
        row = None if table is None else (table, parameters[UPDATED_ID])
        if run and (width + len(names) > MAX_PARAMETERS or row in updated):
            _flush(run, sent)
            run, width = [], 0
            updated.clear()
        run.append((sql, parameters))
        width += len(names)
        if row is not None:
            updated.add(row)
    _flush(run, sent)
    return sent


def _flush(run: list[tuple[str, dict[str, Any]]], sent: list[Deferred]) -> None:
    """Append ``run`` to ``sent``: one write as it is, several as one statement."""
    if len(run) == 1:
        sent.append((run[0][0], run[0][1], False))
    elif run:
        sql, parts = _statement(tuple([sql for sql, _ in run]))
        values = [
            parameters[name] for (_, parameters), names in zip(run, parts, strict=True) for name in names
        ]
        sent.append((sql, values, False))


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
