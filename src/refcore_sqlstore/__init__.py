"""SQL adapters for every port of refcore: SQLite by default, PostgreSQL in production.

The public API is :class:`SqlStore`::

    from refcore_sqlstore import SqlStore

    store = SqlStore(database_url)   # sqlite:///path/file.db, postgresql://user@host/db
    store.migrate()                  # Alembic upgrade to head; idempotent, safe from many processes
    rt = store.runtime(clock=None, notifier=None)
    store.outbox                     # an EventOutbox (FOR UPDATE SKIP LOCKED on PostgreSQL)
    store.sealed_secrets             # SealedSecrets, for moving secrets to a new server key
    store.dispose()

Database errors never leave the package as SQLAlchemy types: lost races become
``refcore.errors.ConcurrentWrite`` (the core retries its unit of work), everything else
``refcore.errors.InternalError``. See docs/deployment.md for running it.
"""

from refcore_sqlstore.outbox import SqlOutbox
from refcore_sqlstore.repository import SqlRepository
from refcore_sqlstore.sealed_secrets import SqlSealedSecrets
from refcore_sqlstore.store import SqlStore
from refcore_sqlstore.unit_of_work import SqlUnitOfWork

__all__ = ["SqlOutbox", "SqlRepository", "SqlSealedSecrets", "SqlStore", "SqlUnitOfWork"]
