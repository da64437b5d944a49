"""PostgreSQL: one psycopg cursor per connection, kept for every statement the driver runs on it.

A psycopg cursor looks up, the first time it meets them, how to dump each parameter's type and
how to load each result column's type, and keeps what it found for its own later statements
only. A new cursor per statement therefore looked everything up again: a trivial query run in
a loop took 60 to 67 µs of CPU with a new cursor each time against 43 to 45 with one, and in
the server's instruction counts the kept cursor saves 1 to 2 % of a request
(``bench/history.md``); a payment runs nine statements.

The driver's statements (:mod:`refcore_sqlstore.driver`) run one at a time on a connection, each
read to its end before the next is sent, so one cursor serves them all. It is kept in the pool
entry's ``info`` (which lives as long as the DBAPI connection) and used only while it belongs
to that very connection and is open; a statement whose driver error closed it gets a new one.
The kept cursor holds its last result until the next statement replaces it: a page of rows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

_KEPT = "refcore_kept_cursor"


def kept_cursor(connection: Connection) -> Any:
    """The cursor of ``connection``'s DBAPI connection, made on first use."""
    entry = connection.connection
    driver = entry.dbapi_connection
    assert driver is not None
    cursor = entry.info.get(_KEPT)
    if cursor is None or cursor.closed or cursor.connection is not driver:
        cursor = entry.info[_KEPT] = driver.cursor()
    return cursor


def is_kept(connection: Connection, cursor: Any) -> bool:
    """Whether ``cursor`` is the kept one, which its users must leave open."""
    return connection.connection.info.get(_KEPT) is cursor
