"""Creating the SQLAlchemy engine for a database URL, with the settings refcore relies on.

**PostgreSQL** URLs (``postgresql://``, ``postgres://``, ``postgresql+psycopg://``) all use the
psycopg 3 driver. Transactions run at ``READ COMMITTED``: the services lock the rows they change
(``SELECT … FOR NO KEY UPDATE``) and unique keys settle duplicate inserts, and each statement
after a lock sees what the previous lock holder committed.

**SQLite** URLs (``sqlite:///path/to/file.db``) get, on every new connection:

- ``PRAGMA busy_timeout`` (10 s by default): a writer waits for another process's write lock
  instead of failing at once;
- ``PRAGMA journal_mode = WAL``: readers never block the writer and a commit is one append
  (switched by :func:`refcore_sqlstore.wal_switch.switch_to_wal`, which waits out another
  connection's switch of a new file);
- ``PRAGMA foreign_keys = ON`` (SQLite leaves foreign keys unchecked otherwise);
- ``PRAGMA cache_size`` of 1 MiB (SQLite's default is 2 MiB *per connection*; a busy pool of 30
  connections kept 60 MiB of duplicated pages, while the operating system caches the file once
  for all of them: measured in ``docs/performance.md``);
- ``PRAGMA temp_store = MEMORY``: every writer runs in a savepoint (the group commit of
  :mod:`refcore_sqlstore.group_commit`), and SQLite keeps a savepoint's journal of the pages it
  changes in a temporary file otherwise, created and deleted once per write: a payment's ledger
  entry insert (seven indexes, the balance triggers) took 237 microseconds with it and 79
  without, in-process; the journal holds a few pages, and refcore makes no temporary tables;
- the driver's own transaction handling switched off, and every transaction that may write
  opened with ``BEGIN IMMEDIATE``, which takes the write lock at once. A unit of work that reads
  and then writes can therefore never find that another process wrote in between; writers queue
  on the lock (within the busy timeout) instead of failing when they upgrade. Read-only units of
  work (``Runtime.read``) begin deferred instead (``READ_ONLY_BEGIN``): a WAL snapshot, no lock.

An in-memory SQLite database (``sqlite://``, ``:memory:``) is refused: each pooled connection
would see its own empty database. Use a file, or ``refcore_memstore`` for an in-memory store.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
from sqlalchemy import URL, Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import ConnectionPoolEntry

from refcore_sqlstore import postgres_round_trips
from refcore_sqlstore.read_only_begin import READ_ONLY_BEGIN
from refcore_sqlstore.wal_switch import switch_to_wal

SQLITE_BUSY_TIMEOUT_SECONDS = 10.0
#: Each connection's page cache, in KiB.
SQLITE_CACHE_KIB = 1024


def normalise_url(database_url: str) -> URL:
    """The URL with its driver made explicit: psycopg 3 for PostgreSQL, pysqlite for SQLite.

    Raises ``ValueError`` (whose message never contains the URL, which may hold a password) for
    a malformed or unsupported URL.
    """
    try:
        url = make_url(database_url)
    except ArgumentError:
        raise ValueError("the database URL is malformed: expected sqlite:///path or postgresql://…") from None
    backend = url.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        if url.database in (None, "", ":memory:") or (url.database or "").startswith("file::memory:"):
            raise ValueError("an in-memory SQLite database is not supported; give a file path")
        return url.set(drivername="sqlite+pysqlite")
    raise ValueError(f"unsupported database {backend!r}: use sqlite:///path or postgresql://…")


def _configure_sqlite_connection(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    assert isinstance(dbapi_connection, sqlite3.Connection)
    # Autocommit at the driver level: SQLAlchemy's ``begin`` event below emits BEGIN itself.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000)}")
        switch_to_wal(dbapi_connection, within_seconds=SQLITE_BUSY_TIMEOUT_SECONDS)
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
        cursor.execute("PRAGMA temp_store = MEMORY")
    finally:
        cursor.close()


def _begin_immediate(connection: Any) -> None:
    """``BEGIN`` sent straight to the driver: a fixed statement with no parameters and no
    result, around which SQLAlchemy's execution path (a context, its events, a result object)
    cost four times what the driver does (``bench/history.md``). Its errors are the driver's,
    which :func:`refcore_sqlstore.errors.database_errors` translates like any other."""
    connection.connection.dbapi_connection.execute("BEGIN" if READ_ONLY_BEGIN.get() else "BEGIN IMMEDIATE")


def _end_leftover_transaction(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    """A connection goes back to the pool without a transaction (and so without the write lock).

    SQLAlchemy skips its rollback-on-return when it believes the transaction already ended, but
    SQLite keeps a transaction open after a refused COMMIT; this makes sure it ends.
    """
    if isinstance(dbapi_connection, sqlite3.Connection) and dbapi_connection.in_transaction:
        dbapi_connection.rollback()


def _json_text(value: Any) -> str:
    """A ``JSON`` column's value as compact UTF-8 JSON text, by orjson.

    Every write that emits an event stores its payload in a ``JSON`` column, and the webhook
    dispatcher reads each one back. For a payment's event (468 bytes) the standard library took
    4.9 µs to encode and 4.1 µs to decode, orjson 0.5 and 1.2. The values are what the API answers with
    (strings, integers, booleans, ``None``, lists and string-keyed objects), which orjson renders
    as the same JSON; it is the encoder of every answer already (``refcore_http.json_response``)."""
    return orjson.dumps(value).decode("utf-8")


#: Statements outside a transaction refcore began (every read, and a transaction's only write:
#: :mod:`refcore_sqlstore.postgres_round_trips`) run at the isolation that refcore's own
#: ``BEGIN`` states, whatever the server's, the database's or the role's default.
_READ_COMMITTED = r"-c default_transaction_isolation=read\ committed"


#: PostgreSQL compiles a statement to machine code (JIT) when its plan's estimated cost passes
#: ``jit_above_cost``. refcore's statements are index lookups of a few rows, and a generic plan
#: estimates their cost pessimistically: the ready-payouts page's balances, one statement for
#: ten affiliates, were estimated at 373,886 on a ledger of a million entries, and spent 27.7 ms
#: compiling for 1.4 ms of work (30 ms a page, against 2 ms at 100,000 entries; ``bench/
#: history.md``, forty-second session). No statement of refcore's runs long enough to repay it.
_NO_JIT = "-c jit=off"


def _session_options(url: URL) -> str:
    """libpq ``options`` for each session: UTC and no JIT compilation, then the URL's own
    ``options`` if any (an operator's ``-c jit=on`` wins), then ``READ COMMITTED`` as the default
    isolation.

    psycopg hands ``timestamptz`` values over in the session's time zone: in UTC they arrive
    as ``datetime.UTC`` values, which :class:`refcore_sqlstore.types.UtcDateTime` passes on
    untouched; in a named zone each value is built in that ``ZoneInfo`` and converted back
    (about 1.2 µs a value more). Nothing refcore stores or compares depends on the session's
    zone, so an operator's ``TimeZone`` in the URL's ``options`` still works (it comes later,
    and wins), only slower. The isolation comes last, so that it holds: refcore's reads and
    writes are built for ``READ COMMITTED`` (row locks where they need them)."""
    given = url.query.get("options")
    theirs = " ".join(given) if isinstance(given, tuple) else (given or "")
    return " ".join(part for part in ("-c TimeZone=UTC", _NO_JIT, theirs, _READ_COMMITTED) if part)


def create_store_engine(url: URL, *, pool_size: int = 10, max_overflow: int = 20) -> Engine:
    """An engine for a normalised URL (see :func:`normalise_url`)."""
    if url.get_backend_name() == "sqlite":
        engine = create_engine(
            url,
            hide_parameters=True,
            json_serializer=_json_text,
            json_deserializer=orjson.loads,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            pool_size=pool_size,
            max_overflow=max_overflow,
        )
        event.listen(engine, "connect", _configure_sqlite_connection)
        event.listen(engine, "begin", _begin_immediate)
        event.listen(engine.pool, "checkin", _end_leftover_transaction)
        return engine
    engine = create_engine(
        url,
        hide_parameters=True,
        json_serializer=_json_text,
        json_deserializer=orjson.loads,
        connect_args={"options": _session_options(url)},
        pool_size=pool_size,
        max_overflow=max_overflow,
    )
    postgres_round_trips.listen(engine)  # liveness at checkout without pool_pre_ping's round trip
    return engine
