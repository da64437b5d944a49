"""Applying the Alembic migrations shipped inside this package, without an ``alembic.ini``.

The migrations run on a connection the store opens, in one transaction:

- on PostgreSQL the transaction first takes an advisory lock (``pg_advisory_xact_lock``), so that
  several server processes starting at once apply the migrations one after another: the first
  upgrades, the others then find the schema at head and do nothing. PostgreSQL's DDL is
  transactional, so a failed migration leaves nothing half-applied.
- on SQLite the transaction starts with ``BEGIN IMMEDIATE`` (the engine's ``begin`` hook), which
  serialises concurrent migrators the same way.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine, text

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

#: Any fixed 64-bit number; it names "refcore schema migration" among the advisory locks.
_ADVISORY_LOCK_KEY = 0x726566636F7265  # "refcore"


def alembic_config(connection: Connection | None = None) -> Config:
    """An in-memory Alembic configuration pointing at the packaged migrations."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


class SchemaFromNewerRelease(Exception):
    """The database is at a migration this release does not ship: a newer release made it.

    Alembic cannot upgrade from a revision it cannot find, and said so with a traceback; an
    operator who rolled a release back (or restarted an old process after a newer one
    migrated) is told instead what happened and what to do."""

    def __init__(self, revisions: set[str]) -> None:
        super().__init__(
            f"the database is at migration {', '.join(sorted(revisions))}, which this release does not "
            "ship: a newer release of refcore migrated it. Run that release, or start this one with "
            "--no-migrate if the newer migrations only added to the schema (docs/deployment.md)"
        )
        self.revisions = revisions


def upgrade_to_head(engine: Engine) -> None:
    """Apply every pending migration; safe to run from several processes at once.

    Raises :class:`SchemaFromNewerRelease`, changing nothing, on a database a newer release
    migrated."""
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY})
        unknown = _unknown(set(MigrationContext.configure(connection).get_current_heads()))
        if unknown:
            raise SchemaFromNewerRelease(unknown)
        command.upgrade(alembic_config(connection), "head")


def _unknown(revisions: set[str]) -> set[str]:
    """Those of ``revisions`` that this release does not ship."""
    script = _scripts()
    unknown = set()
    for revision in revisions:
        try:
            script.get_revision(revision)
        except CommandError:
            unknown.add(revision)
    return unknown


def schema_is_current(engine: Engine) -> bool:
    """Whether the database is at the newest migration (``False`` for an empty database)."""
    return _current_heads(engine) == set(_scripts().get_heads())


def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def _current_heads(engine: Engine) -> set[str]:
    """The revisions the database is at (none for an empty database)."""
    with engine.connect() as connection:
        return set(MigrationContext.configure(connection).get_current_heads())


def schema_is_behind(engine: Engine) -> bool:
    """Whether the database lacks a migration this release ships (an empty database does).

    A database at a revision this release does not know was migrated by a newer one: it is not
    behind, and a server may run on it if that migration was additive (docs/deployment.md).
    A server started with ``--no-migrate`` on a database that is behind would answer ``GET /v1``
    and fail every other request, so ``refcore serve`` refuses to start instead."""
    current = _current_heads(engine)
    if current == set(_scripts().get_heads()):
        return False
    return not _unknown(current)  # a revision of a newer release is not behind
