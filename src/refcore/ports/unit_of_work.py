"""The unit of work: one transaction over every repository.

Nothing written inside is visible to anyone else until :meth:`UnitOfWork.commit`; leaving the
``with`` block without committing, or with an exception, discards every write.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, Self

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
from refcore.ports.ledger import LedgerReads
from refcore.ports.lookups import Found, Lookup
from refcore.ports.metrics import ActivityMetrics
from refcore.ports.repository import Repository


class UnitOfWork(Protocol):
    """Repositories are read-only attributes so that adapters may expose their own subtypes."""

    @property
    def users(self) -> Repository[User]: ...
    @property
    def sessions(self) -> Repository[Session]: ...
    @property
    def organizations(self) -> Repository[Organization]: ...
    @property
    def memberships(self) -> Repository[Membership]: ...
    @property
    def apps(self) -> Repository[App]: ...
    @property
    def api_keys(self) -> Repository[ApiKey]: ...
    @property
    def programs(self) -> Repository[Program]: ...
    @property
    def program_terms(self) -> Repository[ProgramTerms]: ...
    @property
    def program_affiliates(self) -> Repository[ProgramAffiliate]: ...
    @property
    def links(self) -> Repository[Link]: ...
    @property
    def clicks(self) -> Repository[Click]: ...
    @property
    def customers(self) -> Repository[Customer]: ...
    @property
    def referrals(self) -> Repository[Referral]: ...
    @property
    def payments(self) -> Repository[Payment]: ...
    @property
    def refunds(self) -> Repository[Refund]: ...
    @property
    def disputes(self) -> Repository[Dispute]: ...
    @property
    def commission_entries(self) -> Repository[CommissionEntry]: ...
    @property
    def events(self) -> Repository[Event]: ...

    @property
    def webhook_endpoints(self) -> Repository[WebhookEndpoint]: ...

    @property
    def webhook_deliveries(self) -> Repository[WebhookDelivery]: ...

    @property
    def payout_details(self) -> Repository[PayoutDetails]: ...
    @property
    def payout_requests(self) -> Repository[PayoutRequest]: ...
    @property
    def payout_batches(self) -> Repository[PayoutBatch]: ...
    @property
    def payout_executions(self) -> Repository[PayoutExecution]: ...
    @property
    def payout_items(self) -> Repository[PayoutItem]: ...
    @property
    def payout_report_keys(self) -> Repository[PayoutReportKey]: ...
    @property
    def processor_connections(self) -> Repository[ProcessorConnection]: ...

    @property
    def pending_signups(self) -> Repository[PendingSignup]: ...
    @property
    def rate_limit_counters(self) -> Repository[RateLimitCounter]: ...
    @property
    def agreement_versions(self) -> Repository[AgreementVersion]: ...
    @property
    def app_logos(self) -> Repository[AppLogo]: ...

    def metrics(self) -> ActivityMetrics:
        """Aggregate reads (counts, sums, earliest times) over this unit of work's repositories.
        A method, not a repository property: it has no records of its own."""
        ...

    def ledger(self) -> LedgerReads:
        """Balances summed by derived status, and payout states by entry, each in one read."""
        ...

    def look_up(self, *lookups: Lookup[Any]) -> Found:
        """Every lookup's record (or ``None``), read together: one statement on a SQL store
        (see :mod:`refcore.ports.lookups`). Raises ``ValueError`` when a lookup refers to one
        that does not come before it."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Roll back whatever was not committed."""
        ...

    def commit(self) -> None:
        """Make every staged write durable and visible at once. May raise ``ConcurrentWrite``."""
        ...

    def rollback(self) -> None: ...


UnitOfWorkFactory = Callable[[], UnitOfWork]
