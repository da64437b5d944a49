"""The databases a run uses: an SQLite file in the run directory and a fresh PostgreSQL database.

The PostgreSQL database is created for the run on 127.0.0.1:5432 and dropped afterwards (also
when the run fails), so nothing of a run outlives it and no run sees another's rows.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path

import psycopg

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def sqlite_url(directory: Path, name: str) -> str:
    return f"sqlite:///{directory / (name + '.db')}"


def postgres_available() -> bool:
    try:
        with psycopg.connect(PG_ADMIN, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


@contextlib.contextmanager
def postgres_database(label: str) -> Iterator[str]:
    """A new, empty database; yields its URL and drops it on the way out."""
    name = f"refcore_bench_{label}_{secrets.token_hex(4)}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
