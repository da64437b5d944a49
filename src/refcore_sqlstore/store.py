"""``SqlStore``: the one object a server or a script needs to run refcore on SQL.

::

    store = SqlStore("postgresql://refcore@db/refcore")   # or "sqlite:///refcore.db"
    store.migrate()                                        # idempotent, safe from many processes
    rt = store.runtime()                                   # a refcore Runtime on this database
    ...                                                    # rt goes to the services
    store.dispose()
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path

from refcore.clocks import SystemClock
from refcore.identifiers import TimeOrderedIds
from refcore.ports import Clock, EventNotifier
from refcore.services.runtime import NullNotifier, Runtime
from refcore_sqlstore import postgres_round_trips
from refcore_sqlstore.bucket_pruning import prune_balance_buckets
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.group_commit import existing_group_commit, group_commit
from refcore_sqlstore.kept_connections import KeptConnections, idle_connections_for
from refcore_sqlstore.migrate import schema_is_behind, schema_is_current, upgrade_to_head
from refcore_sqlstore.outbox import SqlOutbox
from refcore_sqlstore.postgres_reads import PostgresReadUnitOfWork, PostgresSnapshotUnitOfWork
from refcore_sqlstore.rate_limit_pruning import prune_rate_limit_counters
from refcore_sqlstore.sealed_secrets import SqlSealedSecrets
from refcore_sqlstore.signup_pruning import prune_pending_signups
from refcore_sqlstore.sqlite_turns import GroupCommitUnitOfWork, ReadOnlyUnitOfWork
from refcore_sqlstore.unit_of_work import SqlUnitOfWork, mappers


class SqlStore:
    """A database (SQLite file or PostgreSQL) holding refcore's state, and its connection pool.

    One per process; thread-safe. Each unit of work borrows one pooled connection
    (:mod:`refcore_sqlstore.kept_connections`).
    """

    def __init__(self, database_url: str, *, pool_size: int = 10, max_overflow: int = 20) -> None:
        self._mappers = mappers()
        self._url = normalise_url(database_url)
        self._engine = create_store_engine(self._url, pool_size=pool_size, max_overflow=max_overflow)
        # On PostgreSQL every unit of work and the outbox's statements run on one; on SQLite the
        # reads (the writers share the group commit's connection).
        postgresql = self.dialect == "postgresql"
        self._kept = KeptConnections(
            self._engine,
            keep=idle_connections_for(pool_size),
            still_open=postgres_round_trips.still_open if postgresql else None,
            outside_transaction=postgres_round_trips.outside_transaction if postgresql else None,
        )
        self._outbox = SqlOutbox(self._engine, self._mappers["events"], self._kept)
        self._sealed_secrets = SqlSealedSecrets(self._engine)

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._url.get_backend_name()

    @property
    def safe_url(self) -> str:
        """The URL with any password masked, for logs and messages."""
        return self._url.render_as_string(hide_password=True)

    def database_file_missing(self) -> bool:
        """Whether the URL names an SQLite file that does not exist yet. SQLite creates the file
        at the first connection, so a command that expects the servers' database (``refcore
        reseal-secrets``, ``serve --no-migrate``) asks first, rather than leave an empty file
        behind a mistyped path. ``False`` for PostgreSQL (the server answers for its own
        databases) and for an SQLite URI (``uri=true``), whose path SQLite reads itself."""
        if self.dialect != "sqlite" or self._url.query.get("uri") or not self._url.database:
            return False
        return not Path(self._url.database).exists()

    def migrate(self) -> None:
        """Bring the schema to the newest migration (nothing to do when it is current)."""
        with database_errors():
            upgrade_to_head(self._engine)

    def schema_is_current(self) -> bool:
        """Whether :meth:`migrate` has nothing left to apply."""
        with database_errors():
            return schema_is_current(self._engine)

    def schema_is_behind(self) -> bool:
        """Whether this release's migrations are not all applied (see :func:`.migrate.schema_is_behind`)."""
        with database_errors():
            return schema_is_behind(self._engine)

    def unit_of_work(self) -> SqlUnitOfWork:
        if self.dialect == "sqlite":
            return GroupCommitUnitOfWork(self._engine)
        return SqlUnitOfWork(self._engine, self._kept)

    def read_unit_of_work(self) -> SqlUnitOfWork:
        """A unit of work for reads only: deferred on SQLite (no write lock); on PostgreSQL its
        statements run in autocommit and its repositories refuse writes (see
        :mod:`refcore_sqlstore.postgres_reads`)."""
        if self.dialect == "sqlite":
            return ReadOnlyUnitOfWork(self._engine, self._kept)
        return PostgresReadUnitOfWork(self._engine, self._kept)

    def snapshot_unit_of_work(self) -> SqlUnitOfWork:
        """A unit of work for reads whose statements must all see one moment: SQLite's read
        units of work already do (a WAL snapshot from the first read); on PostgreSQL one
        ``REPEATABLE READ READ ONLY`` transaction (:class:`.postgres_reads.PostgresSnapshotUnitOfWork`)."""
        if self.dialect == "sqlite":
            return ReadOnlyUnitOfWork(self._engine, self._kept)
        return PostgresSnapshotUnitOfWork(self._engine, self._kept)

    def _write_batch(self) -> AbstractContextManager[None]:
        """SQLite's :meth:`GroupCommit.batch <refcore_sqlstore.group_commit.GroupCommit.batch>`."""
        turns = group_commit(self._engine)
        assert turns is not None, "write batches are for SQLite engines"
        return turns.batch()

    def runtime(self, clock: Clock | None = None, notifier: EventNotifier | None = None) -> Runtime:
        """A :class:`~refcore.services.runtime.Runtime` whose units of work run on this database."""
        clock = clock or SystemClock()
        return Runtime(
            unit_of_work=self.unit_of_work,
            read_unit_of_work=self.read_unit_of_work,
            # SQLite's reads, a block's included, are WAL snapshots already.
            snapshot_unit_of_work=self.snapshot_unit_of_work if self.dialect == "postgresql" else None,
            # PostgreSQL begins a transaction with its first statement; SQLite's writers queue.
            reads_join_writes=self.dialect == "postgresql",
            write_batch=self._write_batch if self.dialect == "sqlite" else None,
            clock=clock,
            ids=TimeOrderedIds(clock),
            notifier=notifier or NullNotifier(),
        )

    def prune(self, now: datetime) -> int:
        """Delete the rows that nothing reads at ``now`` or later: the balance projection's past
        days, hours and minutes, the rate-limit counters of ended windows and the signups never
        confirmed, a week after their token expired; how many went. The
        server does it every ``REFCORE_PRUNE_INTERVAL_SECONDS``; any number of processes may do
        it at once.

        Pruning at ``now`` assumes no balance is read again at a moment more than an hour before
        it (the margin of :mod:`refcore_sqlstore.bucket_pruning`). A library caller whose clock
        goes back further (a test's :class:`~refcore.clocks.ManualClock` set back a day) reads a
        balance without the pruned rows, which then disagrees with the entries; prune only with
        a clock that moves forward, as a real one does."""
        return (
            self.prune_balance_buckets(now)
            + prune_rate_limit_counters(self._engine, now)
            + prune_pending_signups(self._engine, now)
        )

    def prune_balance_buckets(self, now: datetime) -> int:
        """Delete the balance projection's rows that no balance read at ``now`` or later sums
        (:mod:`refcore_sqlstore.bucket_pruning`); how many went."""
        return prune_balance_buckets(self._engine, now)

    @property
    def outbox(self) -> SqlOutbox:
        """The :class:`refcore.ports.EventOutbox` of this database."""
        return self._outbox

    @property
    def sealed_secrets(self) -> SqlSealedSecrets:
        """The :class:`refcore.ports.SealedSecrets` of this database (``refcore reseal-secrets``)."""
        return self._sealed_secrets

    def dispose(self) -> None:
        """Close every pooled connection. The store may be used again afterwards (it reconnects)."""
        turns = existing_group_commit(self._engine)
        if turns is not None:
            turns.release_writer()
        self._kept.close_all()
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"SqlStore({self.safe_url!r})"
