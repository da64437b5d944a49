"""Choosing the store from the database URL, in one place.

``memory://`` is the in-memory store (nothing survives the process: for trying the API and for
tests); any other URL is the SQL store (``sqlite:///path`` or ``postgresql://…``), imported only
when asked for so that the memory store works without a database driver.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from attrs import frozen

from refcore.ports import Clock, EventNotifier, EventOutbox, SealedSecrets
from refcore.services.runtime import Runtime

MEMORY_URL = "memory://"


class StoreUnavailable(RuntimeError):
    """The URL names a store this installation cannot open, or cannot migrate."""


@frozen
class OpenStore:
    runtime: Runtime
    outbox: EventOutbox
    #: Whether state outlives the process (a session token minted here can be used by a server).
    persistent: bool
    #: Bring the schema up to date (nothing to do for memory); idempotent.
    migrate: Callable[[], None]
    #: Whether a migration this release ships is not applied yet (never, for memory).
    schema_is_behind: Callable[[], bool]
    #: Whether the URL names an SQLite file that does not exist (asked before anything connects,
    #: which would create it).
    file_missing: Callable[[], bool]
    dispose: Callable[[], None]
    #: Delete stored rows that no read at the given moment or later needs (the SQL store's past
    #: balance buckets and ended rate-limit windows); how many went. The server calls it
    #: periodically.
    prune: Callable[[datetime], int]
    #: The URL with any password masked, for messages.
    description: str
    #: Every stored sealed secret, for ``refcore reseal-secrets``.
    sealed_secrets: SealedSecrets


def _nothing() -> None:
    return None


def _nothing_to_prune(_now: datetime) -> int:
    return 0


def _never() -> bool:
    return False


def is_memory(database_url: str) -> bool:
    return database_url.strip().lower().startswith("memory:")


def is_postgresql(database_url: str) -> bool:
    """``postgresql://…`` and the driver-named ``postgresql+psycopg://…`` (and ``postgres://``)."""
    scheme = database_url.strip().lower().partition(":")[0]
    return scheme in ("postgres", "postgresql") or scheme.startswith("postgresql+")


def _for_webhooks(runtime: Runtime) -> Runtime:
    """The server's runtime: its outbox is read by the webhook dispatcher alone, so an event no
    request is due for is written closed (:attr:`Runtime.outbox_for_webhooks`)."""
    runtime.outbox_for_webhooks = True
    return runtime


def open_store(
    database_url: str,
    *,
    clock: Clock | None = None,
    notifier: EventNotifier | None = None,
    pool_size: int = 10,
    max_overflow: int = 20,
) -> OpenStore:
    """The store the URL names; ``pool_size`` and ``max_overflow`` size an SQL store's pool."""
    if is_memory(database_url):
        from refcore_memstore import MemoryDatabase, MemoryOutbox, MemorySealedSecrets, memory_runtime

        database = MemoryDatabase()
        return OpenStore(
            runtime=_for_webhooks(memory_runtime(clock=clock, notifier=notifier, database=database)),
            outbox=MemoryOutbox(database),
            persistent=False,
            migrate=_nothing,
            schema_is_behind=_never,
            file_missing=_never,
            dispose=_nothing,
            prune=_nothing_to_prune,
            description=MEMORY_URL,
            sealed_secrets=MemorySealedSecrets(database),
        )
    try:
        from refcore_sqlstore import SqlStore
        from refcore_sqlstore.migrate import SchemaFromNewerRelease
    except ImportError as exc:  # pragma: no cover - the SQL store ships with refcore
        raise StoreUnavailable(
            f"The SQL store is not available in this installation ({exc}); use {MEMORY_URL}"
        ) from None
    try:
        store = SqlStore(database_url, pool_size=pool_size, max_overflow=max_overflow)
    except ValueError as exc:  # an unsupported or malformed URL; the message names no password
        raise StoreUnavailable(f"Cannot open the database: {exc}") from None

    def migrate() -> None:
        try:
            store.migrate()
        except SchemaFromNewerRelease as newer:
            raise StoreUnavailable(str(newer)) from None

    return OpenStore(
        runtime=_for_webhooks(store.runtime(clock=clock, notifier=notifier)),
        outbox=store.outbox,
        persistent=True,
        migrate=migrate,
        schema_is_behind=store.schema_is_behind,
        file_missing=store.database_file_missing,
        dispose=store.dispose,
        prune=store.prune,
        description=store.safe_url,
        sealed_secrets=store.sealed_secrets,
    )
