"""The SQL sealed secrets: pages read without locks, compare-and-set updates a batch per transaction.

A page is one ``SELECT`` in ID order through the primary key, run as a read unit of work runs
(:data:`~refcore_sqlstore.read_only_begin.READ_ONLY_BEGIN`: SQLite's deferred ``BEGIN``, which
takes no write lock; on PostgreSQL a statement in autocommit). A batch of replacements is one
write transaction (:func:`~refcore_sqlstore.group_commit.write_transaction`: a member of
SQLite's group commit, an ordinary transaction on PostgreSQL) of one
``UPDATE … WHERE id = :id AND <column> = :old`` per row, whose row count says whether it wrote.
On PostgreSQL at ``READ COMMITTED`` an ``UPDATE`` that meets a row another transaction changed
waits for it and checks its ``WHERE`` again on the committed row, so a secret an API call
rotated meanwhile is never overwritten, whichever commits first.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager

from sqlalchemy import Column, Connection, Engine, Table, bindparam, select, update

from refcore.ports.sealed_secrets import Replacement, SealedSecret, SecretKind
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.group_commit import write_transaction
from refcore_sqlstore.read_only_begin import READ_ONLY_BEGIN
from refcore_sqlstore.tables import processor_connections, webhook_endpoints


class _Statements:
    """A kind's page and compare-and-set statements, built once."""

    def __init__(self, table: Table, column: Column[str]) -> None:
        self.page = (
            select(table.c.id, table.c.app_id, column)
            .where(table.c.id > bindparam("after"), column != "")
            .order_by(table.c.id)
            .limit(bindparam("limit"))
        )
        self.replace = (
            update(table)
            .where(table.c.id == bindparam("row_id"), column == bindparam("old"))
            .values({column.name: bindparam("new")})
        )


_STATEMENTS = {
    SecretKind.WEBHOOK_ENDPOINT: _Statements(webhook_endpoints, webhook_endpoints.c.secret_ciphertext),
    SecretKind.PROCESSOR_CONNECTION: _Statements(
        processor_connections, processor_connections.c.webhook_secret_ciphertext
    ),
}


class SqlSealedSecrets:
    """Implements :class:`refcore.ports.SealedSecrets`."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def sealed_after(self, kind: SecretKind, after: str | None, *, limit: int) -> list[SealedSecret]:
        statements = _STATEMENTS[kind]
        with database_errors(), _reading(self._engine) as connection:
            rows = connection.execute(statements.page, {"after": after or "", "limit": limit}).all()
        return [SealedSecret(kind=kind, id=row[0], app_id=row[1], ciphertext=row[2]) for row in rows]

    def replace_unchanged(self, kind: SecretKind, replacements: Collection[Replacement]) -> frozenset[str]:
        if not replacements:
            return frozenset()
        statement = _STATEMENTS[kind].replace
        written = set()
        with database_errors(), write_transaction(self._engine) as connection:
            for replacement in replacements:
                result = connection.execute(
                    statement, {"row_id": replacement.id, "old": replacement.old, "new": replacement.new}
                )
                if result.rowcount == 1:
                    written.add(replacement.id)
        return frozenset(written)


@contextmanager
def _reading(engine: Engine) -> Iterator[Connection]:
    """A connection whose transaction begins as a read unit of work's does (no write lock)."""
    token = READ_ONLY_BEGIN.set(True)
    try:
        with engine.connect() as connection:
            connection.begin()
            yield connection
    finally:
        READ_ONLY_BEGIN.reset(token)
