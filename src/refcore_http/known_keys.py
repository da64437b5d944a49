"""The API keys this app has authenticated, and as what: a later write with one of them asks the
database only whether the key still stands, in the first read of its own work.

On PostgreSQL a keyed write read its key in a statement of its own, then did its work: that
statement took 31 % of refcore's CPU for a payment made in-process, as much as the payment's
lookup of six records, and 5 % of its instructions over HTTP (``bench/history.md``,
twenty-ninth session). What a key authenticates as (its App, mode, kind and program
affiliate) is fixed when it is issued; only its revocation can change. So once a write has
authenticated a key, a later write with it on a store whose reads join its writes
(:meth:`~refcore.services.runtime.Runtime.read_then_write`) takes the principal known here and
leaves the one open question, "is this key still not revoked?", to the write's first read
(:meth:`~refcore.services.runtime.Runtime.check_with_first_read`): a payment's or identify's
lookup of everything it reads carries it in the same statement. ``GET`` requests neither use
nor fill this memory: their reads cannot take the check, so a digest would be made for
nothing.

Nothing is taken on trust: every request still asks the database about its key, and is answered
only after the database said yes, so a revoked key fails at once, on every server process, as
before. A refused key is forgotten. Only key digests are kept, never a credential, and at most
:data:`LIMIT` of them (the whole memory is emptied when full: a key that is used again is
simply authenticated again). Session tokens are not kept (sessions end).
"""

from __future__ import annotations

from refcore.credentials import digest
from refcore.errors import Unauthenticated
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime
from refcore.services.tenancy import key_still_standing, refused_credential

#: Keys kept at most; about 300 bytes each.
LIMIT = 4096
_KEY_PREFIX = "key_"


class KnownKeys:
    """Per app: key digest -> the principal it authenticated as."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._principals: dict[str, Principal] = {}

    def __len__(self) -> int:
        return len(self._principals)

    def principal(self, runtime: Runtime, credential: str) -> Principal | None:
        """The principal ``credential`` authenticated as before, provided ``runtime`` checks in
        the work running now that the key still stands; ``None`` (nothing taken) when the key
        is not known here or the runtime cannot take the check where the work runs."""
        if not self._principals or not credential.startswith(_KEY_PREFIX):
            return None  # nothing known (SQLite keeps nothing): no digest to make
        hashed = digest(credential)
        known = self._principals.get(hashed)
        if known is None:
            return None

        def refused() -> Unauthenticated:
            self._principals.pop(hashed, None)
            return refused_credential()

        if not runtime.check_with_first_read(key_still_standing(hashed, known), refused):
            return None
        return known

    def remember(self, runtime: Runtime, credential: str, principal: Principal) -> None:
        """Keep what the key ``credential`` authenticated as, where the runtime can check it later."""
        if not runtime.reads_join_writes or not credential.startswith(_KEY_PREFIX):
            return
        if len(self._principals) >= self._limit:
            self._principals.clear()
        self._principals[digest(credential)] = principal
