"""The in-memory sealed secrets: pages and compare-and-set replacements under the database lock.

Each call holds the lock that serialises units of work, so a replacement batch is atomic with
respect to them, as the SQL store's transaction is.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from attrs import evolve

from refcore.ports.sealed_secrets import Replacement, SealedSecret, SecretKind
from refcore_memstore.database import MemoryDatabase

#: The table and the field holding each kind's sealed secret.
_WHERE: dict[SecretKind, tuple[str, str]] = {
    SecretKind.WEBHOOK_ENDPOINT: ("webhook_endpoints", "secret_ciphertext"),
    SecretKind.PROCESSOR_CONNECTION: ("processor_connections", "webhook_secret_ciphertext"),
}


class MemorySealedSecrets:
    """Implements :class:`refcore.ports.SealedSecrets` over a :class:`MemoryDatabase`."""

    def __init__(self, database: MemoryDatabase) -> None:
        self._db = database

    def sealed_after(self, kind: SecretKind, after: str | None, *, limit: int) -> list[SealedSecret]:
        table, column = _WHERE[kind]
        with self._db.lock:
            records: list[Any] = list(self._db.tables[table].values())
        found = sorted(
            (
                SealedSecret(kind=kind, id=r.id, app_id=r.app_id, ciphertext=getattr(r, column))
                for r in records
                if getattr(r, column) and (after is None or r.id > after)
            ),
            key=lambda s: s.id,
        )
        return found[:limit]

    def replace_unchanged(self, kind: SecretKind, replacements: Collection[Replacement]) -> frozenset[str]:
        table, column = _WHERE[kind]
        written: set[str] = set()
        with self._db.lock:
            rows = self._db.tables[table]
            for replacement in replacements:
                record: Any = rows.get(replacement.id)
                if record is not None and getattr(record, column) == replacement.old:
                    rows[replacement.id] = evolve(record, **{column: replacement.new})
                    written.add(replacement.id)
        return frozenset(written)
