"""Switching a SQLite database to write-ahead logging when several connections open it at once.

``PRAGMA journal_mode = WAL`` on a database still in rollback mode (a new file) takes a shared
lock and then the exclusive one. When two connections switch at the same moment, both hold the
shared lock and each waits for the other: SQLite breaks that deadlock by failing one of them with
"database is locked" at once, without waiting on ``busy_timeout``. Several server processes
starting together on a new file met this (1 in about 35 switches, four at a time, here), and the
loser failed its start-up with a ``ConcurrentWrite``. The switch changes nothing when it fails and
is a no-op once the database is in WAL mode, so trying again, after the winner has finished, is
always safe: this module does that, for as long as ``busy_timeout`` would have waited.
"""

from __future__ import annotations

import sqlite3
import time

#: The first pause between attempts, and the longest; pauses double in between.
_FIRST_PAUSE_SECONDS = 0.001
_LONGEST_PAUSE_SECONDS = 0.05


def switch_to_wal(connection: sqlite3.Connection, within_seconds: float) -> None:
    """Put the database of ``connection`` in WAL mode, trying again while another connection's
    switch holds the lock, until ``within_seconds`` have passed (then the error is raised)."""
    deadline = time.monotonic() + within_seconds
    pause = _FIRST_PAUSE_SECONDS
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL").close()
            return
        except sqlite3.OperationalError as error:
            if "database is locked" not in str(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_SECONDS)
