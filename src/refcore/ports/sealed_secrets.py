"""The stored secrets sealed under the server key, read in pages and replaced only if unchanged.

Changing ``REFCORE_SECRET_KEY`` ends with every sealed secret moved to the new key
(:mod:`refcore.services.secret_resealing`, ``refcore reseal-secrets``), while the servers keep
running: an API call may rotate an endpoint's secret, or disconnect a processor connection, at
any moment in between. A unit of work over a whole table would hold its locks (SQLite's one
write lock) for as long as the pass takes, and a plain ``replace`` could write a secret read
before that call over the one the call stored. So this port offers two narrower things:

- pages of sealed secrets in ID order, read without locks, to work through a table of any size
  a page at a time;
- a batch of replacements applied in one short transaction, each only where the row still holds
  the ciphertext that was read (a compare-and-set), so a secret changed meanwhile is never
  overwritten; the store says which rows it wrote.

Only the ciphertext column is written: the record's other fields, its ``updated_at`` included,
stay as they are, since the secret itself does not change.
"""

from __future__ import annotations

import enum
from collections.abc import Collection
from typing import Protocol

from attrs import field, frozen


class SecretKind(enum.Enum):
    """Which records hold the sealed secret, and so which column."""

    #: ``webhook_endpoints.secret_ciphertext``, sealed for the App.
    WEBHOOK_ENDPOINT = "webhook_endpoint"
    #: ``processor_connections.webhook_secret_ciphertext``, sealed for the connection and its App.
    PROCESSOR_CONNECTION = "processor_connection"


@frozen
class SealedSecret:
    """One record's sealed secret as stored, with what its seal is bound to (``app_id``, ``id``)."""

    kind: SecretKind
    id: str
    app_id: str
    ciphertext: str = field(repr=False)


@frozen
class Replacement:
    """Write ``new`` into record ``id`` if it still holds ``old``."""

    id: str
    old: str = field(repr=False)
    new: str = field(repr=False)


class SealedSecrets(Protocol):
    """The sealed secrets of every App, across the whole store (an operator's command, not a
    request: no tenant scoping)."""

    def sealed_after(self, kind: SecretKind, after: str | None, *, limit: int) -> list[SealedSecret]:
        """Up to ``limit`` records of ``kind`` with ``id > after`` (all when ``None``) that hold a
        secret (not ``""``: a removed endpoint, a disconnected connection), in ID order, as
        committed when read. Takes no lock."""
        ...

    def replace_unchanged(self, kind: SecretKind, replacements: Collection[Replacement]) -> frozenset[str]:
        """In one transaction, set each record's ciphertext to ``new`` where it still equals
        ``old``; the IDs of the records written. A record whose ciphertext changed since it was
        read (or that is gone) is left as it is."""
        ...
