"""Database errors become the core's errors here, at the adapter boundary.

- A unique key taken by a concurrent transaction, a PostgreSQL serialization failure or
  deadlock, or an SQLite lock still held after the busy timeout are lost races:
  :class:`refcore.errors.ConcurrentWrite`, which makes ``Runtime.transaction`` run the unit of work
  again (and the second run sees the winner's row, turning a duplicate into a replay).
- A PostgreSQL statement prepared before a migration changed the type of a column it returns
  (``cached plan must not change result type``) is stale, not wrong: the unit of work discards
  its connection (:class:`~refcore_sqlstore.unit_of_work.SqlUnitOfWork`), with every statement
  prepared on it, and the error is a :class:`refcore.errors.ConcurrentWrite` too, so a write
  runs again on another connection, and so does a read (``Runtime.read``), whose next run on
  the connection's replacement prepares the statement anew. Without this, a read kept failing on
  that connection until the server restarted: a read ends in no rollback, which is what makes
  psycopg forget a connection's prepared statements (:mod:`refcore_sqlstore.postgres_reads`).
- Anything else (an unreachable server, a broken check constraint) is a fault the caller cannot
  fix: :class:`refcore.errors.InternalError`, whose message names no table, value or secret. The
  database error stays attached as ``__cause__`` for the server's log; the engine is created with
  ``hide_parameters=True``, so even that carries no bound values.

No SQLAlchemy or driver exception type leaves this package.
"""

from __future__ import annotations

import sqlite3
from types import TracebackType

import psycopg.errors
from sqlalchemy import exc

from refcore.errors import ConcurrentWrite, InternalError, ValidationError

# SQLite result codes (https://sqlite.org/rescode.html).
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_CONSTRAINT_PRIMARYKEY = 1555
_SQLITE_CONSTRAINT_UNIQUE = 2067

_PG_LOST_RACE = (
    psycopg.errors.UniqueViolation,
    psycopg.errors.SerializationFailure,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.LockNotAvailable,
)


def is_lost_race(error: BaseException) -> bool:
    """Whether a driver error means another transaction won a race for the same rows."""
    if isinstance(error, _PG_LOST_RACE):
        return True
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        if code in (_SQLITE_CONSTRAINT_UNIQUE, _SQLITE_CONSTRAINT_PRIMARYKEY):
            return True
        if code is not None and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return True
        message = str(error)
        return message.startswith("UNIQUE constraint failed") or "database is locked" in message
    return False


#: Where PostgreSQL raises a stale prepared statement's error: its message is translated with
#: the server's ``lc_messages``, the function that raises it is not.
_STALE_PLAN_SOURCE = "RevalidateCachedQuery"


def is_stale_plan(error: BaseException) -> bool:
    """Whether ``error``, or what it was translated or wrapped from, is PostgreSQL refusing a
    prepared statement whose result type a schema change altered (see the module docstring)."""
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 4:
        if isinstance(current, psycopg.errors.FeatureNotSupported):
            source = current.diag.source_function
            if source is None:  # a server or proxy that names no source: the English message
                return str(current).startswith("cached plan must not change result type")
            return source == _STALE_PLAN_SOURCE
        original = getattr(current, "orig", None) if isinstance(current, exc.SQLAlchemyError) else None
        current = original if isinstance(original, BaseException) else current.__cause__
        seen += 1
    return False


def translate(error: exc.SQLAlchemyError | sqlite3.Error | psycopg.Error) -> Exception:
    """The core error for a database error (see the module docstring): one that SQLAlchemy
    wrapped, or one the driver raised for a statement sent to it directly (``BEGIN`` and the
    group commit's savepoints)."""
    original = getattr(error, "orig", None) if isinstance(error, exc.SQLAlchemyError) else error
    if original is not None and is_lost_race(original):
        return ConcurrentWrite("a concurrent transaction changed the same records; run the work again")
    if original is not None and is_stale_plan(original):
        return ConcurrentWrite("a statement prepared before the schema changed; run the work again")
    if isinstance(original, psycopg.DataError) and "NUL" in str(original):
        return _unstorable_text()
    return InternalError("The database could not complete the operation")


_DATABASE_ERRORS = (exc.SQLAlchemyError, sqlite3.Error, psycopg.Error)


def _unstorable_text() -> ValidationError:
    """A value that no SQL store can hold was given where the core takes ``str`` and does not check it
    (an ID a library caller passes): an unpaired UTF-16 surrogate, which the driver cannot encode, or
    the NUL character, which PostgreSQL's ``text`` cannot hold. The server refuses both where it reads
    a request; a library caller had got a raw ``UnicodeEncodeError`` or an ``internal_error``
    (probe L). No record can hold such a value, so nothing is found or written; the memory store,
    which can hold it, answers as for any unknown ID."""
    return ValidationError(
        "A value holds an unpaired UTF-16 surrogate or the NUL character, which no record can hold"
    )


class _Translating:
    """The context manager :func:`database_errors` returns. A class rather than a generator
    decorated with ``contextmanager``: it wraps every statement a write sends, and a generator's
    set-up and tear-down cost 1.25 µs a block against 0.4. It holds no state, so one instance
    serves every block and every thread."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _traceback: TracebackType | None
    ) -> None:
        if isinstance(error, _DATABASE_ERRORS):
            raise translate(error) from error
        if isinstance(error, UnicodeEncodeError):
            raise _unstorable_text() from error
        if isinstance(error, OverflowError):
            # SQLite's driver binds integers of 64 bits at most: a library caller's 2**63 where
            # an ID belongs had escaped raw (probe AD). No record holds it, as above.
            raise ValidationError("A value holds an integer too large for any record") from error


_TRANSLATING = _Translating()


def database_errors() -> _Translating:
    """Run a block of database calls, translating what they raise."""
    return _TRANSLATING


#: Why a connection could not be made, for the operator: a phrase a driver's message contains,
#: and what it means. Only these fixed sentences reach the command line, never the driver's own
#: text, which may quote the URL's host (where a password with an unencoded ``@`` ends up).
_CONNECTION_FAILURES = (
    ("does not exist", "the database or the user named in the URL does not exist"),
    ("password authentication failed", "the server refused the user name or password"),
    ("no password supplied", "the server wants a password and the URL has none"),
    ("connection refused", "nothing accepts connections at that host and port"),
    ("failed to resolve host", "the host name does not resolve"),
    ("could not translate host name", "the host name does not resolve"),
    ("timeout expired", "the connection timed out"),
    ("invalid", "the URL has an invalid connection option"),
    (
        "unable to open database file",
        "SQLite cannot open the file: does its directory exist, and may it be written?",
    ),
)


def connection_failure(error: BaseException | None) -> str | None:
    """Why the database behind ``error`` (an :class:`~refcore.errors.InternalError`'s
    ``__cause__``) could not be reached, in one of the fixed sentences above; ``None`` when it
    is another fault or an unknown one. For the ``refcore`` command's one-line error."""
    original = getattr(error, "orig", None) or error
    if not (
        isinstance(original, (psycopg.OperationalError, sqlite3.OperationalError))
        or _is_unparsed_connection_string(original)
    ):
        return None
    message = str(original).lower()
    return next((meaning for phrase, meaning in _CONNECTION_FAILURES if phrase in message), None)


def _is_unparsed_connection_string(error: BaseException | None) -> bool:
    """Whether psycopg refused the connection string before connecting (``invalid connection
    option "…"`` for an unknown query parameter of the URL): a ``ProgrammingError`` of its own,
    with no SQLSTATE. One the server raised (a missing table, a syntax error) has one, and is
    another fault than a connection that could not be made."""
    return isinstance(error, psycopg.ProgrammingError) and error.sqlstate is None
