"""Alembic environment for refcore's schema.

Migrations are run by :func:`refcore_sqlstore.migrate.upgrade_to_head` (``SqlStore.migrate()``,
``refcore migrate``), which hands over an open connection inside a transaction (holding the
migration lock); there is no ``alembic.ini`` and no offline mode.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from refcore_sqlstore.tables import metadata

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise RuntimeError("run refcore's migrations through SqlStore.migrate() or `refcore migrate`")

context.configure(connection=connection, target_metadata=metadata, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
