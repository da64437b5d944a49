"""Aggregate reads on SQL: one ``SELECT count(*) / sum(…) / min(…)`` per question.

Each statement is an equality filter on a prefix of one of the aggregate indexes of
:mod:`refcore_sqlstore.tables`, plus a range on the index's last (time) column, so the database
answers it from one index range rather than by reading history
(``tests/selfservice/test_metric_indexes.py`` checks the plans on SQLite and PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, Table, func, select

from refcore.ports.metrics import Period
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.mapping import RowMapper, db_value


class SqlMetrics:
    """Implements :class:`refcore.ports.metrics.ActivityMetrics` inside one unit of work's
    connection (so it sees that unit of work's own writes)."""

    def __init__(self, connection: Connection, mappers: Mapping[str, RowMapper[Any]]) -> None:
        self._connection = connection
        self._mappers = mappers

    def _filtered(
        self, repository: str, where: Mapping[str, object], within: Period | None
    ) -> tuple[Table, list[ColumnElement[bool]]]:
        mapper = self._mappers[repository]
        table = mapper.table
        clauses: list[ColumnElement[bool]] = []
        for field, value in where.items():
            column = table.c[mapper.column(field)]
            clauses.append(column.is_(None) if value is None else column == db_value(value))
        if within is not None:
            moment = table.c[mapper.column(within.field)]
            if within.start is not None:
                clauses.append(moment >= within.start)
            if within.end is not None:
                clauses.append(moment < within.end)
        return table, clauses

    def _scalar(self, statement: Select[Any]) -> Any:
        with database_errors():
            return self._connection.execute(statement).scalar_one()

    def count(self, repository: str, where: Mapping[str, object], *, within: Period | None = None) -> int:
        table, clauses = self._filtered(repository, where, within)
        return int(self._scalar(select(func.count()).select_from(table).where(*clauses)))

    def sum(
        self, repository: str, field: str, where: Mapping[str, object], *, within: Period | None = None
    ) -> int:
        table, clauses = self._filtered(repository, where, within)
        column = table.c[self._mappers[repository].column(field)]
        return int(self._scalar(select(func.coalesce(func.sum(column), 0)).where(*clauses)))

    def earliest(
        self, repository: str, where: Mapping[str, object], *, field: str = "created_at"
    ) -> datetime | None:
        table, clauses = self._filtered(repository, where, None)
        column = table.c[self._mappers[repository].column(field)]
        value = self._scalar(select(func.min(column)).where(*clauses))
        assert value is None or isinstance(value, datetime)
        return value
