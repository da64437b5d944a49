"""The in-memory unit of work: staged writes, applied all at once on commit, discarded otherwise."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self, get_args, get_type_hints

from refcore.errors import InternalError
from refcore.models import (
    ApiKey,
    App,
    Click,
    CommissionEntry,
    Customer,
    Dispute,
    Event,
    Link,
    Membership,
    Organization,
    Payment,
    Program,
    ProgramAffiliate,
    ProgramTerms,
    Referral,
    Refund,
    Session,
    User,
    WebhookDelivery,
    WebhookEndpoint,
)
from refcore.models.app_profile import AgreementVersion, AppLogo
from refcore.models.payout import (
    PayoutBatch,
    PayoutDetails,
    PayoutExecution,
    PayoutItem,
    PayoutReportKey,
    PayoutRequest,
)
from refcore.models.processor import ProcessorConnection
from refcore.models.signup import PendingSignup, RateLimitCounter
from refcore.ports.lookups import FieldOf, Found, Lookup, check_order
from refcore_memstore.database import APPEND_ONLY, UNIQUE_KEYS, MemoryDatabase
from refcore_memstore.ledger import MemoryLedgerReads
from refcore_memstore.metrics import MemoryMetrics
from refcore_memstore.repository import MemoryRepository


class MemoryUnitOfWork:
    """Implements :class:`refcore.ports.UnitOfWork` over a :class:`MemoryDatabase`."""

    users: MemoryRepository[User]
    sessions: MemoryRepository[Session]
    organizations: MemoryRepository[Organization]
    memberships: MemoryRepository[Membership]
    apps: MemoryRepository[App]
    api_keys: MemoryRepository[ApiKey]
    programs: MemoryRepository[Program]
    program_terms: MemoryRepository[ProgramTerms]
    program_affiliates: MemoryRepository[ProgramAffiliate]
    links: MemoryRepository[Link]
    clicks: MemoryRepository[Click]
    customers: MemoryRepository[Customer]
    referrals: MemoryRepository[Referral]
    payments: MemoryRepository[Payment]
    refunds: MemoryRepository[Refund]
    disputes: MemoryRepository[Dispute]
    commission_entries: MemoryRepository[CommissionEntry]
    events: MemoryRepository[Event]
    webhook_endpoints: MemoryRepository[WebhookEndpoint]
    webhook_deliveries: MemoryRepository[WebhookDelivery]
    payout_details: MemoryRepository[PayoutDetails]
    payout_requests: MemoryRepository[PayoutRequest]
    payout_batches: MemoryRepository[PayoutBatch]
    payout_executions: MemoryRepository[PayoutExecution]
    payout_items: MemoryRepository[PayoutItem]
    payout_report_keys: MemoryRepository[PayoutReportKey]
    processor_connections: MemoryRepository[ProcessorConnection]
    pending_signups: MemoryRepository[PendingSignup]
    rate_limit_counters: MemoryRepository[RateLimitCounter]
    agreement_versions: MemoryRepository[AgreementVersion]
    app_logos: MemoryRepository[AppLogo]

    def __init__(self, database: MemoryDatabase) -> None:
        self._db = database
        self._repos: dict[str, MemoryRepository[Any]] = {}
        #: Only while the block holds the database lock: a unit of work kept after its block
        #: had still committed, without the lock that serialises the units of work.
        self._open = False

    def __enter__(self) -> Self:
        self._db.lock.acquire()
        self._open = True
        for name, model in _MODELS.items():
            repo: MemoryRepository[Any] = MemoryRepository(
                self._db.tables[name],
                model=model,
                unique_keys=UNIQUE_KEYS.get(name, ()),
                append_only=name in APPEND_ONLY,
            )
            self._repos[name] = repo
            setattr(self, name, repo)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.rollback()
        finally:
            self._open = False
            self._db.lock.release()

    def metrics(self) -> MemoryMetrics:
        return MemoryMetrics(self._repos)

    def ledger(self) -> MemoryLedgerReads:
        return MemoryLedgerReads(self._repos)

    def look_up(self, *lookups: Lookup[Any]) -> Found:
        """Each lookup in turn, through its repository's ``find_one``."""
        check_order(lookups)
        found: dict[Lookup[Any], object | None] = {}
        for lookup in lookups:
            where = _resolved(lookup, found)
            found[lookup] = None if where is None else self._repos[lookup.repository].find_one(where)
        return Found(found)

    def commit(self) -> None:
        if not self._open:
            # A unit of work kept after its block would write without the database lock.
            raise InternalError("The unit of work is not open")
        for name, repo in self._repos.items():
            repo.flush_into(self._db.tables[name])

    def rollback(self) -> None:
        for repo in self._repos.values():
            repo.discard()


#: Each repository's name and model, read from the class's annotations once.
_MODELS: dict[str, type] = {
    name: get_args(hint)[0] for name, hint in get_type_hints(MemoryUnitOfWork).items()
}


def _resolved(lookup: Lookup[Any], found: dict[Lookup[Any], object | None]) -> dict[str, object] | None:
    """The lookup's filter with each :class:`FieldOf` replaced by its value; ``None`` when one
    has no value (its record is missing or the field is ``None``), which matches nothing."""
    where: dict[str, object] = {}
    for name, value in lookup.where.items():
        if isinstance(value, FieldOf):
            source = found[value.lookup]
            value = None if source is None else getattr(source, value.field)
            if value is None:
                return None
        where[name] = value
    return where
