"""The committed state of an in-memory store, and the constraints it enforces like a database would."""

from __future__ import annotations

import threading
from collections import defaultdict

#: Unique keys per repository, mirroring the SQL store's unique constraints. A key containing
#: ``None`` never clashes (as SQL ``NULL`` never equals ``NULL``).
UNIQUE_KEYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "users": (("email",),),
    "sessions": (("token_digest",),),
    "memberships": (("organization_id", "user_id"),),
    "api_keys": (("digest",),),
    "programs": (("slug",),),
    "program_affiliates": (("program_id", "email"),),
    "links": (("code",),),
    "customers": (("app_id", "mode", "external_customer_id"),),
    "referrals": (("customer_id",),),
    "payments": (("app_id", "mode", "payment_id"),),
    "refunds": (("app_id", "mode", "refund_id"),),
    "disputes": (("app_id", "mode", "dispute_id"),),
    "webhook_endpoints": (("app_id",),),
    "webhook_deliveries": (("event_id",),),
    "payout_details": (("program_affiliate_id",),),
    "payout_requests": (("open_program_affiliate_id",),),
    "payout_executions": (("live_program_affiliate_id",),),
    "payout_items": (("active_entry_id",),),
    "payout_report_keys": (("app_id", "idempotency_key"),),
    "processor_connections": (("install_nonce",), ("active_app_mode",)),
    "pending_signups": (("token_digest",),),
    "rate_limit_counters": (("key", "window_start"),),
    "app_logos": (("app_id",),),
}

#: Repositories whose records may never be replaced.
APPEND_ONLY = frozenset({"commission_entries"})


class MemoryDatabase:
    """Tables of committed records by ID, and one lock that serialises units of work.

    Holding the lock for a whole unit of work gives serializable isolation, which is what the
    SQL store's row locks achieve for the records that matter; within one process that is the
    same observable behaviour.
    """

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, object]] = defaultdict(dict)
        self.lock = threading.RLock()
