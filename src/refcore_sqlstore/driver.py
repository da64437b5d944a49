"""A statement compiled once per dialect by SQLAlchemy, then run on the driver's cursor.

SQLAlchemy's ``Connection.execute`` wraps every statement in an execution context, its events
and a result object, and for a statement that fetches one row by its primary key that costs
about four times what the driver does (53 against 10.5 us; ``bench/history.md``). A payment runs
ten such statements. The repository's statements are fixed (built once per table and shape,
see :mod:`refcore_sqlstore.statements`), so the work SQLAlchemy repeats at every call can be
done once instead: a :class:`DriverStatement` keeps the SQL text the dialect compiled, the
order of its parameters and the type processors of its binds and columns (timestamps, JSON,
booleans on SQLite), and runs the statement on the DBAPI connection under the unit of work's
SQLAlchemy connection, inside its transaction. The SQL sent is the text SQLAlchemy would send,
so the query plans are the same too (``tests/sqlstore/test_driver_statements.py`` runs both
paths side by side).

What SQLAlchemy's path also did, and this one keeps:

- ``before_cursor_execute`` listeners hear of each statement with the SQL and parameters sent
  (``context`` is ``None``, and a listener cannot rewrite the statement). Tests record SQL so.
  An insert that PostgreSQL sends later (:meth:`DriverStatement.send`) is announced when it is
  made, in the order of the unit of work, with ``cursor`` ``None``.
- A driver error that means the connection is gone invalidates the SQLAlchemy connection, so
  the pool discards it. Every driver error then propagates as the driver raised it, and
  :func:`refcore_sqlstore.errors.database_errors` translates it like SQLAlchemy's.

On PostgreSQL every statement of a connection runs on the one cursor it keeps
(:mod:`refcore_sqlstore.kept_cursors`); elsewhere each gets its own.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Dialect, Select, exc
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

from refcore_sqlstore import kept_cursors, postgres_round_trips

Processor = Callable[[Any], Any]
Row = dict[str, Any]


class DriverStatement:
    """One statement compiled for one dialect, run without SQLAlchemy's execution path.

    ``column_keys`` names the columns an ``INSERT`` or ``UPDATE`` sets, each passed as the
    parameter of its name; a ``SELECT`` needs none. Binds that carry their own value (the
    ``LIMIT`` of a page) are filled in here; the caller passes the others by name.
    """

    __slots__ = (
        "_bind_processors",
        "_column_types",
        "_constants",
        "_in_order",
        "_names",
        "_positional",
        "_processors_by_position",
        "_reads_only",
        "_result",
        "_takes_values",
        "sql",
        "statement",
    )

    def __init__(
        self, statement: ClauseElement, dialect: Dialect, column_keys: Sequence[str] | None = None
    ) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=list(column_keys) if column_keys else None)
        assert isinstance(compiled, SQLCompiler)
        #: What it was compiled from, and the SQL text the driver receives.
        self.statement = statement
        self.sql: str = compiled.string
        binds = {name: bind for bind, name in compiled.bind_names.items()}
        for name, bind in binds.items():
            if bind.expanding or bind.literal_execute:
                raise ValueError(f"bind {name!r} is rendered at each execution; run it through SQLAlchemy")
        if compiled.escaped_bind_names:
            # A name the paramstyle cannot carry as is, renamed in the SQL text only.
            raise ValueError(f"bind names {sorted(compiled.escaped_bind_names)} need escaping; rename them")
        positiontup = compiled.positiontup
        self._positional = positiontup is not None
        self._names: tuple[str, ...] = tuple(positiontup) if positiontup is not None else tuple(binds)
        self._in_order = _getter_of(self._names)
        # Only the binds that carry a value of their own (a page's ``LIMIT``): a column an
        # ``INSERT`` sets is a required bind, whose placeholder value every call replaces, and
        # merging eleven placeholders into each row of a batch of clicks cost 0.4 µs a row.
        self._constants: Row = {
            name: bind.effective_value
            for name, bind in binds.items()
            if not bind.required and (bind.value is not None or bind.callable)
        }
        # A name used twice in the statement (positional styles list it twice) is processed once.
        unique_names = dict.fromkeys(self._names)
        bind_processors = ((name, _bind_processor(binds[name].type, dialect)) for name in unique_names)
        self._bind_processors: tuple[tuple[str, Processor], ...] = tuple(
            (name, process) for name, process in bind_processors if process is not None
        )
        #: The same processors by position, for values already in the statement's order
        #: (:meth:`send_values`); only for a positional statement that names no bind twice.
        processors = dict(self._bind_processors)
        self._processors_by_position: tuple[tuple[int, Processor], ...] = tuple(
            (index, processors[name]) for index, name in enumerate(self._names) if name in processors
        )
        self._takes_values = (
            self._positional and not self._constants and len(unique_names) == len(self._names)
        )
        #: A plain ``SELECT``: no row lock, no ``WITH`` clause that could write. On PostgreSQL
        #: it may run before its transaction's ``BEGIN`` (:mod:`.postgres_round_trips`).
        self._reads_only = (
            isinstance(statement, Select) and statement._for_update_arg is None and not compiled.ctes
        )
        # A ``SELECT``'s columns, or those an ``UPDATE … RETURNING`` returns.
        selected = getattr(statement, "selected_columns", None) or getattr(
            statement, "exported_columns", None
        )
        self._column_types: tuple[TypeEngine[Any], ...] = tuple(column.type for column in selected or ())
        #: The result's column names and processors (by position), from the first execution's
        #: cursor description: a processor may depend on the type the driver reports.
        self._result: tuple[tuple[str, ...], tuple[tuple[int, Processor], ...]] | None = None

    def parameters(self, params: Mapping[str, Any]) -> Any:
        """The parameters as the driver takes them: in order, or by name, types processed."""
        values = {**self._constants, **params} if self._constants else dict(params)
        for name, process in self._bind_processors:
            try:
                values[name] = process(values[name])
            except Exception as error:
                raise self._unprocessable(name, error) from error
        if self._positional:
            try:
                return self._in_order(values)
            except KeyError as missing:
                message = f"no value for bind {missing.args[0]!r}"
                raise exc.StatementError(message, self.sql, None, missing) from None
        return values

    def _unprocessable(self, name: str, error: Exception) -> exc.StatementError:
        """As SQLAlchemy reports a value its type refuses (a naive datetime, say), so that
        ``database_errors`` treats it alike; the value is not in the message."""
        return exc.StatementError(f"bind {name!r} could not be processed", self.sql, None, error)

    def execute(self, connection: Connection, params: Mapping[str, Any]) -> int:
        """Run a write; the number of rows it matched."""
        cursor = _run(connection, self.sql, self.parameters(params), many=False)
        try:
            count: int = cursor.rowcount
        finally:
            _done(connection, cursor)
        return count

    def send(self, connection: Connection, params: Mapping[str, Any]) -> None:
        """Run a write whose outcome the caller does not look at (an ``INSERT``, an ``UPDATE``
        of a locked row). On PostgreSQL it leaves with the connection's next statement or its
        ``COMMIT``, in the same round trip (:mod:`refcore_sqlstore.postgres_round_trips`), and
        its error, if any, is raised there; elsewhere it runs now."""
        self._send(connection, self.parameters(params), many=False)

    def send_many(self, connection: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """:meth:`send` for a write run once per row, in one call to the driver (its
        ``executemany``)."""
        self._send(connection, [self.parameters(row) for row in rows], many=True)

    @property
    def names(self) -> tuple[str, ...]:
        """The statement's parameters, in the order a positional driver takes them."""
        return self._names

    @property
    def takes_values(self) -> bool:
        """Whether :meth:`send_values` may run it: its driver takes parameters by position,
        each name once, with no value of the statement's own to fill in."""
        return self._takes_values

    def send_values(self, connection: Connection, values: list[Any]) -> None:
        """:meth:`send` for parameters given as one list of values in the order of :attr:`names`
        (a multi-row insert's rows one after another), processed in place: no dictionary a row
        (:meth:`refcore_sqlstore.statements.TableStatements.add_rows`)."""
        if not self._takes_values:
            raise TypeError("this statement takes its parameters by name")
        for position, process in self._processors_by_position:
            try:
                values[position] = process(values[position])
            except Exception as error:
                raise self._unprocessable(self._names[position], error) from error
        self._send(connection, values, many=False)

    def _send(self, connection: Connection, parameters: Any, *, many: bool) -> None:
        if connection.dialect.name != "postgresql":
            _done(connection, _run(connection, self.sql, parameters, many=many))
            return
        if not connection.in_transaction():
            connection.begin()
        _announce(connection, None, self.sql, parameters, many)
        postgres_round_trips.defer(connection, self.sql, parameters, many=many)

    def fetch(self, connection: Connection, params: Mapping[str, Any]) -> list[Row]:
        """Run a query; its rows as ``{column name: value}``, values converted by their types."""
        names, rows, processors = self._query(connection, params)
        found = [dict(zip(names, row, strict=True)) for row in rows]
        if processors:
            for row_values, row in zip(rows, found, strict=True):
                for index, process in processors:
                    row[names[index]] = process(row_values[index])
        return found

    def fetch_tuples(self, connection: Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run a query; its rows as tuples in the order of its columns, converted by their types."""
        _names, rows, processors = self._query(connection, params)
        if not processors:
            return [tuple(row) for row in rows]
        found = []
        for row in rows:
            values = list(row)
            for index, process in processors:
                values[index] = process(values[index])
            found.append(tuple(values))
        return found

    def _query(
        self, connection: Connection, params: Mapping[str, Any]
    ) -> tuple[tuple[str, ...], list[Sequence[Any]], tuple[tuple[int, Processor], ...]]:
        cursor = _run(connection, self.sql, self.parameters(params), many=False, reads_only=self._reads_only)
        try:
            rows = cursor.fetchall()
            names, processors = self._result or self._read_result(connection.dialect, cursor.description)
        finally:
            _done(connection, cursor)
        return names, rows, processors

    def _read_result(
        self, dialect: Dialect, description: Sequence[Sequence[Any]]
    ) -> tuple[tuple[str, ...], tuple[tuple[int, Processor], ...]]:
        if len(description) != len(self._column_types):
            raise RuntimeError(
                f"expected {len(self._column_types)} columns, the driver described {len(description)}"
            )
        names = tuple(str(column[0]) for column in description)
        found = (
            (index, type_.dialect_impl(dialect).result_processor(dialect, column[1]))
            for index, (type_, column) in enumerate(zip(self._column_types, description, strict=True))
        )
        processors = tuple((index, process) for index, process in found if process is not None)
        self._result = (names, processors)
        return self._result


#: Per dialect (one per engine), the module-level statements compiled for it so far.
_COMPILED: weakref.WeakKeyDictionary[Dialect, dict[int, DriverStatement]] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def compiled_for(statement: ClauseElement, dialect: Dialect) -> DriverStatement:
    """``statement`` compiled once for ``dialect``; for statements built once, at module level
    (they are told apart by identity, and must live as long as the process)."""
    statements = _COMPILED.get(dialect)
    found = statements.get(id(statement)) if statements is not None else None
    if found is None or found.statement is not statement:
        with _GUARD:
            found = _COMPILED.setdefault(dialect, {})[id(statement)] = DriverStatement(statement, dialect)
    return found


def _getter_of(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """The values of ``names`` as one tuple, in order: ``operator.itemgetter`` builds it in C, 0.15
    against 0.45 µs for a list comprehension over a click's eleven columns. A missing name
    raises ``KeyError`` naming it, as indexing does. (``itemgetter`` of one name returns the
    value itself, not a tuple of one.)"""
    if len(names) > 1:
        return operator.itemgetter(*names)
    if names:
        (only,) = names
        return lambda values: (values[only],)
    return lambda values: ()


def _bind_processor(type_: TypeEngine[Any], dialect: Dialect) -> Processor | None:
    process: Processor | None = type_.dialect_impl(dialect).bind_processor(dialect)
    return process


def _announce(connection: Connection, cursor: Any, sql: str, parameters: Any, many: bool) -> None:
    """Tell the ``before_cursor_execute`` listeners (``context`` ``None``: no SQLAlchemy execution)."""
    listeners = connection.dispatch.before_cursor_execute
    if listeners:
        for listen in listeners:
            listen(connection, cursor, sql, parameters, None, many)


def _run(connection: Connection, sql: str, parameters: Any, *, many: bool, reads_only: bool = False) -> Any:
    """The driver's cursor after running ``sql`` (the caller closes it).

    Like ``Connection.execute``, a statement outside a transaction begins one (after a
    rollback, say): the driver would begin its own on PostgreSQL, and SQLAlchemy, unaware of
    it, would then make ``commit`` a no-op.
    """
    if not connection.in_transaction():
        connection.begin()
    dbapi_connection = connection.connection.dbapi_connection
    assert dbapi_connection is not None
    postgresql = connection.dialect.name == "postgresql"
    cursor = kept_cursors.kept_cursor(connection) if postgresql else dbapi_connection.cursor()
    _announce(connection, cursor, sql, parameters, many)
    try:
        if postgresql:
            postgres_round_trips.execute(
                connection, cursor, sql, parameters, many=many, reads_only=reads_only
            )
        elif many:
            cursor.executemany(sql, parameters)
        else:
            cursor.execute(sql, parameters)
    except connection.dialect.loaded_dbapi.Error as error:
        gone = connection.dialect.is_disconnect(error, dbapi_connection, cursor)
        cursor.close()
        if gone:
            connection.invalidate(error)
        raise
    return cursor


def _done(connection: Connection, cursor: Any) -> None:
    """Close a statement's cursor, unless it is the connection's kept one (PostgreSQL)."""
    if not kept_cursors.is_kept(connection, cursor):
        cursor.close()
