"""PostgreSQL: a unit of work's deferred inserts sent as one statement.

A payment's commit sends four ``INSERT``s (the payment, its commission entry, two events) and
the ``COMMIT`` in one pipeline (:mod:`refcore_sqlstore.postgres_round_trips`): one round trip,
but psycopg still does a statement's whole work for each, converting its query, dumping its
parameters, preparing and sending it and reading its result. Four one-row inserts in a pipeline
took 565 µs of client CPU against 300 µs for the same rows as one statement (a throwaway probe,
pinned to one CPU; ``bench/history.md``, twenty-seventh session).

So consecutive deferred inserts go as one statement of data-modifying ``WITH`` clauses::

    WITH refcore_i0 AS (INSERT INTO payments ...), refcore_i1 AS (INSERT INTO events ...)
    INSERT INTO commission_entries ...

What PostgreSQL does with it is what it did with the separate statements, in one command:

- every insert runs to completion, whether or not the statement reads its output;
- unique constraints are checked per row, so a duplicate key fails the statement with the same
  error as before (a lost race, ``ConcurrentWrite``), and nothing of it is kept;
- ``AFTER`` triggers (the balance projection's, on a commission entry) fire once the whole
  statement is done, in a command of their own, so they see every row the statement inserted,
  as they saw the rows of the statements before them; refcore's foreign keys are checked at
  ``COMMIT`` (``DEFERRABLE INITIALLY DEFERRED``);
- no insert reads a table another one writes (they are ``VALUES`` lists), so that the
  sub-statements share one snapshot changes nothing.

Statements sent with ``executemany`` and anything but a plain ``INSERT … VALUES`` (``BEGIN``,
``COMMIT``, savepoints, an upsert) go as they are. A joined statement keeps under PostgreSQL's
limit of 65,535 parameters by starting a new one at :data:`MAX_PARAMETERS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

#: One deferred statement: SQL text, parameters (a list of them for ``executemany``), ``many``.
Deferred = tuple[str, Any, bool]

#: Parameters of one joined statement at most (PostgreSQL refuses more than 65,535).
MAX_PARAMETERS = 30_000

_NAMED = re.compile(r"%\((\w+)\)s")
_PLAIN_INSERT = re.compile(r"INSERT INTO \w+ \([^)]*\) VALUES \(")


def joined(pending: Sequence[Deferred]) -> Iterator[Deferred]:
    """``pending`` in order, with each run of two or more inserts joined into one statement."""
    run: list[tuple[str, Mapping[str, Any]]] = []
    width = 0
    for deferred in pending:
        sql, parameters, many = deferred
        positional = None if many or not isinstance(parameters, Mapping) else _joinable(sql)
        if positional is None:
            yield from _flushed(run)
            run, width = [], 0
            yield deferred
            continue
        names = positional[1]
        if run and width + len(names) > MAX_PARAMETERS:
            yield from _flushed(run)
            run, width = [], 0
        run.append((sql, parameters))
        width += len(names)
    yield from _flushed(run)


def _flushed(run: list[tuple[str, Mapping[str, Any]]]) -> Iterator[Deferred]:
    if len(run) == 1:
        yield run[0][0], run[0][1], False
    elif run:
        sql, parts = _statement(tuple(sql for sql, _ in run))
        values = [
            parameters[name] for (_, parameters), names in zip(run, parts, strict=True) for name in names
        ]
        yield sql, values, False


@lru_cache(maxsize=256)
def _joinable(sql: str) -> tuple[str, tuple[str, ...]] | None:
    """A plain ``INSERT … VALUES`` with its named placeholders made positional, and their names
    in order; ``None`` for any other statement. An upsert is left alone: two of the same row in
    one statement fail (``ON CONFLICT DO UPDATE`` cannot affect a row a second time)."""
    if not _PLAIN_INSERT.match(sql) or "ON CONFLICT" in sql or "RETURNING" in sql:
        return None
    names = tuple(_NAMED.findall(sql))
    return _NAMED.sub("%s", sql), names


@lru_cache(maxsize=256)
def _statement(sqls: tuple[str, ...]) -> tuple[str, tuple[tuple[str, ...], ...]]:
    """The joined statement of ``sqls``, and each one's parameter names in the order it takes."""
    parts = []
    for sql in sqls:
        part = _joinable(sql)
        assert part is not None, "only plain inserts are joined"
        parts.append(part)
    clauses = ", ".join(f"refcore_i{index} AS ({sql})" for index, (sql, _) in enumerate(parts[:-1]))
    return f"WITH {clauses} {parts[-1][0]}", tuple(names for _, names in parts)
