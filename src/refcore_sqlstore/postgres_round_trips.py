"""PostgreSQL: as few round trips to the server per unit of work as the statements allow.

Every statement the driver sends outside psycopg's pipeline mode waits for the server's answer
before the next one leaves: a round trip, two context switches and a system call or two on each
side; on a network with a real round-trip time, latency too. A payment used to make
seventeen: the pool's liveness ping and ``BEGIN`` before each of its two units of work, the
key's lookup and ``COMMIT``, six selects, four inserts and ``COMMIT``. It makes three now, of
one statement each: the key's lookup; its six reads, joined into one
(:mod:`refcore_sqlstore.lookups`); and its four inserts, joined into one
(:mod:`refcore_sqlstore.joined_writes`), which needs no ``BEGIN`` or ``COMMIT``, by the four
changes below (``tests/sqlstore/test_postgres_round_trips.py`` counts them in libpq's trace).
With a key the server has authenticated before it makes two: the key's check rides with the
six reads (:mod:`refcore_http.known_keys`).

- **Liveness without a round trip.** Instead of SQLAlchemy's ``pool_pre_ping`` (a ``;`` sent at
  every checkout), :func:`refuse_closed_connection` looks at the idle connection's socket. A
  server that ends a connection (a restart, ``pg_terminate_backend``, an idle timeout) first
  sends the client an error message and closes its end, so the socket of a connection that died
  while pooled is readable; a live idle one has nothing to read (refcore sends no ``LISTEN``;
  anything else a server sends unprompted costs one reconnection). The pool then discards it and
  checks out another, as after a failed ping. A server that vanished
  without closing its end fails the first statement instead, which the ping would also have
  waited on.
- **Writes whose result nothing needs wait for the next statement.** An ``INSERT``, or an
  ``UPDATE`` of a row its transaction has locked
  (:meth:`DriverStatement.send <refcore_sqlstore.driver.DriverStatement.send>`), is kept on the
  connection (:func:`defer`) and sent in one pipeline with whatever statement comes next: a
  ``SELECT``, which then sees it as before, or the ``COMMIT``. A payment's four inserts and
  its commit are one round trip, and the four inserts one statement
  (:mod:`refcore_sqlstore.joined_writes`); so are a refund's inserts and its payment's update.
- **``BEGIN`` goes with the first statement.** psycopg sends its own ``BEGIN`` before a
  transaction's first statement and waits for the answer, even inside a pipeline: a round trip
  that carries nothing. So the driver runs in autocommit (:func:`driver_autocommit`, at
  connect), and each transaction SQLAlchemy begins defers refcore's own ``BEGIN ISOLATION LEVEL
  READ COMMITTED`` (:func:`_defer_begin`) like a write: it leaves with the first statement,
  and a transaction that sends nothing never reaches the server. psycopg's ``commit`` and
  ``rollback`` read the transaction's state from the server's answers, not from the autocommit
  flag, so they end such a transaction as they end their own. A read unit of work begins
  none (:mod:`refcore_sqlstore.read_only_begin`): its statements run in autocommit
  (:mod:`refcore_sqlstore.postgres_reads`).
- **Only a statement that needs the transaction begins it.** A plain ``SELECT`` (no row lock)
  that comes before anything else of a write unit of work runs in autocommit, and the
  ``BEGIN`` waits. Nothing it sees changes: at ``READ COMMITTED`` each statement reads as of
  its own start, and before its first write a transaction has nothing of its own to see. If
  what is left to send at the ``COMMIT`` is one statement (a payment's joined inserts after
  its reads), it goes alone, without ``BEGIN`` or ``COMMIT``: in autocommit PostgreSQL runs a
  statement as a transaction of its own, applied whole or not at all, at the session's default
  isolation, which :mod:`refcore_sqlstore.engine` sets to ``READ COMMITTED``. A payment sends
  three statements instead of five, and its key's read and its look-up hold no transaction open.

What changes for a deferred write is only *when* its error arrives: a duplicate key or a broken
constraint is raised by the statement or the ``COMMIT`` that carried it, still inside the unit of
work and still translated by :func:`refcore_sqlstore.errors.database_errors`, so the unit of
work fails (or runs again, for a lost race) exactly as before. A rollback, or a connection going
back to the pool, discards what was never sent.
"""

from __future__ import annotations

import contextlib
import select
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from sqlalchemy import Connection, Engine, event, exc
from sqlalchemy.engine.interfaces import DBAPIConnection, ExecutionContext
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from refcore_sqlstore.joined_writes import Deferred, joined
from refcore_sqlstore.read_only_begin import READ_ONLY_BEGIN

#: Where a connection's deferred writes wait (``Connection.info``, its pool entry's ``info``).
_PENDING = "refcore_deferred_writes"

#: A transaction's start as psycopg would send it at refcore's isolation level, stated so that
#: a server whose ``default_transaction_isolation`` differs changes nothing.
_BEGIN: Deferred = ("BEGIN ISOLATION LEVEL READ COMMITTED", None, False)
#: A snapshot read's start (:class:`refcore_sqlstore.postgres_reads.PostgresSnapshotUnitOfWork`):
#: every statement after it sees the database as of its first.
_SNAPSHOT_BEGIN: Deferred = ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", None, False)


def defer(connection: Connection, sql: str, parameters: Any, *, many: bool) -> None:
    """Keep a write to send with the connection's next statement or its ``COMMIT``."""
    pending: list[Deferred] | None = connection.info.get(_PENDING)
    if pending is None:
        connection.info[_PENDING] = pending = []
    pending.append((sql, parameters, many))


def execute(
    connection: Connection, cursor: Any, sql: str, parameters: Any, *, many: bool, reads_only: bool = False
) -> None:
    """Run ``sql`` on ``cursor`` in one round trip with the connection's deferred writes (and
    its transaction's ``BEGIN``), whose errors are raised here. A plain read (``reads_only``:
    no row lock, nothing written) that comes before anything else of its transaction runs
    without the ``BEGIN``, which waits for a statement that needs it."""
    pending: list[Deferred] | None = connection.info.pop(_PENDING, None)
    if not pending:
        _run(cursor, sql, parameters, many)
        return
    if reads_only and pending == [_BEGIN]:
        connection.info[_PENDING] = pending
        _run(cursor, sql, parameters, many)
        return
    driver: psycopg.Connection[Any] = cursor.connection
    with collected_pipeline(driver):
        _send(driver, pending)
        _run(cursor, sql, parameters, many)


def in_transaction(connection: Connection) -> bool:
    """Whether the connection's statements run inside a transaction: one the server has begun,
    or one whose ``BEGIN`` waits to go with the next statement."""
    pending: list[Deferred] | None = connection.info.get(_PENDING)
    return (pending is not None and (_BEGIN in pending or _SNAPSHOT_BEGIN in pending)) or (
        _driver(connection).info.transaction_status != psycopg.pq.TransactionStatus.IDLE
    )


def flush(connection: Connection) -> None:
    """Send the connection's deferred writes now (one round trip), if it has any."""
    pending: list[Deferred] | None = connection.info.pop(_PENDING, None)
    if pending:
        driver = _driver(connection)
        with collected_pipeline(driver):
            _send(driver, pending)


@contextlib.contextmanager
def collected_pipeline(driver: psycopg.Connection[Any]) -> Iterator[None]:
    """``driver.pipeline()``, with what a refused statement left in it collected before it ends.

    A statement the server refuses aborts those queued behind it. When its error arrives while
    the pipeline is still open (the server answered before the next statement was queued, as in
    a race lost on a unique key), psycopg's ``Pipeline.__exit__`` collects the aborted results,
    fails again ("pipeline aborted") and logs that second failure as a warning, once for every
    lost race, replayed payments among them. Collected here first, they leave nothing to log;
    the refused statement's own error is raised as before."""
    with driver.pipeline() as pipeline:
        try:
            yield
        except psycopg.Error:
            with contextlib.suppress(psycopg.Error):  # "pipeline aborted": the error says it all
                pipeline.sync()
            raise


def _driver(connection: Connection) -> psycopg.Connection[Any]:
    driver = connection.connection.dbapi_connection
    assert isinstance(driver, psycopg.Connection)
    return driver


def _send(driver: psycopg.Connection[Any], pending: Sequence[Deferred]) -> None:
    """Run the deferred statements in order, consecutive writes as one (:mod:`.joined_writes`)."""
    _run_all(driver, joined(pending))


def _run_all(driver: psycopg.Connection[Any], statements: Iterable[Deferred]) -> None:
    with driver.cursor() as cursor:
        for sql, parameters, many in statements:
            _run(cursor, sql, parameters, many)


def _run(cursor: Any, sql: str, parameters: Any, many: bool) -> None:
    if many:
        cursor.executemany(sql, parameters)
    else:
        cursor.execute(sql, parameters)


# -- the engine's listeners ----------------------------------------------------------------------


def _commit_with_deferred_writes(connection: Connection) -> None:
    """``COMMIT`` in the same round trip as the deferred writes before it. psycopg's own
    ``commit`` that SQLAlchemy calls next finds no transaction open (psycopg reads the state
    from the server's answers) and sends nothing."""
    pending: list[Deferred] | None = connection.info.pop(_PENDING, None)
    if pending == [_BEGIN] or pending == [_SNAPSHOT_BEGIN]:
        return  # the transaction never reached the server: there is nothing to end
    if pending:
        driver = _driver(connection)
        try:
            statements = list(joined(pending))
            if len(statements) == 2 and statements[0] == _BEGIN and not statements[1][2]:
                # The transaction's one write, after reads (if any) that ran before its
                # ``BEGIN``: in autocommit a statement is a transaction of its own, which
                # PostgreSQL applies whole or not at all, so it goes without ``BEGIN`` and
                # ``COMMIT``.
                _run_all(driver, statements[1:])
                return
            with collected_pipeline(driver):
                # ``COMMIT`` as a statement of the pipeline: psycopg's ``commit()`` would wait
                # for its own sync before the pipeline's last one, a second round trip.
                _run_all(driver, [*statements, ("COMMIT", None, False)])
        except BaseException:
            # A refused write aborted the transaction, and the COMMIT queued after it was never
            # run: end it here, for SQLAlchemy considers it over once this event has run and
            # would hand the connection back to the pool still inside it.
            with contextlib.suppress(psycopg.Error):
                driver.rollback()
            raise


def driver_autocommit(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    """At connect: psycopg sends no ``BEGIN`` of its own (see :func:`_defer_begin`)."""
    assert isinstance(dbapi_connection, psycopg.Connection)
    dbapi_connection.autocommit = True


def _defer_begin(connection: Connection) -> None:
    """Each transaction SQLAlchemy begins (explicitly, or before a statement outside one)
    begins on the server with its first statement, unless it is a read's (:data:`READ_ONLY_BEGIN`)."""
    if not READ_ONLY_BEGIN.get():
        defer(connection, *_BEGIN[:2], many=False)


def begin_snapshot(connection: Connection) -> None:
    """Begin a read-only transaction that sees one moment on ``connection``, on which SQLAlchemy's
    transaction has begun as a read's (none on the server): its ``BEGIN`` goes with the first
    statement, whose start is the moment every later statement sees. A snapshot read that sends
    nothing never reaches the server."""
    defer(connection, *_SNAPSHOT_BEGIN[:2], many=False)


def begin_in_autocommit(connection: Connection) -> None:
    """Begin SQLAlchemy's transaction on ``connection`` and none on the server, as a read unit of
    work does (:data:`READ_ONLY_BEGIN`): each statement then runs in autocommit, a transaction of
    its own that PostgreSQL applies whole or not at all. For work of one statement (the outbox's
    claim), which a ``BEGIN`` and a ``COMMIT`` would only cost two round trips more."""
    token = READ_ONLY_BEGIN.set(True)
    try:
        connection.begin()
    finally:
        READ_ONLY_BEGIN.reset(token)


def _discard_deferred_writes(connection: Connection) -> None:
    if not connection.invalidated:  # an invalidated one's entry is emptied at checkin
        connection.info.pop(_PENDING, None)


def _discard_on_checkin(_dbapi_connection: DBAPIConnection | None, record: ConnectionPoolEntry) -> None:
    record.info.pop(_PENDING, None)


def _flush_before_sqlalchemy_statement(
    connection: Connection,
    _cursor: Any,
    _statement: str,
    _parameters: Any,
    context: ExecutionContext | None,
    _executemany: bool,
) -> None:
    """A statement run through SQLAlchemy's own path (``context`` set: a count, ``SET LOCAL``)
    must see the writes before it. The driver statements (``context`` ``None``) carry them
    themselves (:func:`execute`)."""
    if context is not None:
        flush(connection)


def _closed(driver: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection is closed, broken, or has something to read on its socket:
    the server's goodbye."""
    if driver.closed or driver.broken:
        return True
    poller = select.poll()
    poller.register(driver.pgconn.socket, select.POLLIN)
    return bool(poller.poll(0))


def refuse_closed_connection(
    dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry, _proxy: PoolProxiedConnection
) -> None:
    """At checkout: ``DisconnectionError`` (the pool then connects anew) for a closed connection."""
    assert isinstance(dbapi_connection, psycopg.Connection)
    if _closed(dbapi_connection):
        raise exc.DisconnectionError("the server closed the pooled connection")


def still_open(connection: Connection) -> bool:
    """Whether a connection kept checked out between units of work
    (:mod:`refcore_sqlstore.kept_connections`) may serve the next one: the check the pool makes
    at checkout (above), made when the connection is taken."""
    return not _closed(_driver(connection))


def outside_transaction(connection: Connection) -> bool:
    """Whether a kept connection given back has no transaction open on the server (which the
    pool's checkin would end). Its unsent writes went with its unit of work's rollback
    (:func:`_discard_deferred_writes`): a write is deferred only inside a transaction."""
    return _driver(connection).pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


def listen(engine: Engine) -> None:
    """Set up a PostgreSQL engine for the above (its pool must not also ``pool_pre_ping``, nor
    the engine set an ``isolation_level``, which would turn the driver's autocommit off)."""
    event.listen(engine, "connect", driver_autocommit)
    event.listen(engine, "begin", _defer_begin)
    event.listen(engine.pool, "checkout", refuse_closed_connection)
    event.listen(engine.pool, "checkin", _discard_on_checkin)
    event.listen(engine, "commit", _commit_with_deferred_writes)
    event.listen(engine, "rollback", _discard_deferred_writes)
    event.listen(engine, "before_cursor_execute", _flush_before_sqlalchemy_statement)
