"""In-memory adapters for every port of refcore: transactional, single-process, fast.

Used by the property tests and by library users who want refcore without a database.
"""

from refcore_memstore.database import MemoryDatabase
from refcore_memstore.outbox import MemoryOutbox
from refcore_memstore.runtime import memory_runtime
from refcore_memstore.sealed_secrets import MemorySealedSecrets
from refcore_memstore.unit_of_work import MemoryUnitOfWork

__all__ = ["MemoryDatabase", "MemoryOutbox", "MemorySealedSecrets", "MemoryUnitOfWork", "memory_runtime"]
