"""The SQL unit of work: one connection and one transaction per unit of work.

Every write runs inside that transaction, so nothing is visible to another connection before
:meth:`SqlUnitOfWork.commit`; leaving the ``with`` block closes the connection, which rolls back
whatever was not committed. On SQLite the transaction starts with ``BEGIN IMMEDIATE`` (see
:mod:`refcore_sqlstore.engine`): the unit of work holds the database's write lock from its first
statement, which serialises writers across threads and processes the way PostgreSQL's row
locks do for the records they touch.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import TracebackType
from typing import Any, Generic, Self, TypeVar, overload

from sqlalchemy import Connection, Engine

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
from refcore.ports.lookups import Found, Lookup
from refcore_sqlstore import lookups as joined_lookups
from refcore_sqlstore.errors import database_errors, is_stale_plan
from refcore_sqlstore.kept_connections import KeptConnections
from refcore_sqlstore.ledger import SqlLedgerReads
from refcore_sqlstore.mapping import RowMapper
from refcore_sqlstore.metrics import SqlMetrics
from refcore_sqlstore.read_only_begin import READ_ONLY_BEGIN
from refcore_sqlstore.repository import SqlRepository
from refcore_sqlstore.tables import metadata

#: Repository name on the unit of work -> model; the table has the same name.
MODELS: dict[str, type] = {
    "users": User,
    "sessions": Session,
    "organizations": Organization,
    "memberships": Membership,
    "apps": App,
    "api_keys": ApiKey,
    "programs": Program,
    "program_terms": ProgramTerms,
    "program_affiliates": ProgramAffiliate,
    "links": Link,
    "clicks": Click,
    "customers": Customer,
    "referrals": Referral,
    "payments": Payment,
    "refunds": Refund,
    "disputes": Dispute,
    "commission_entries": CommissionEntry,
    "events": Event,
    "webhook_endpoints": WebhookEndpoint,
    "webhook_deliveries": WebhookDelivery,
    "payout_details": PayoutDetails,
    "payout_requests": PayoutRequest,
    "payout_batches": PayoutBatch,
    "payout_executions": PayoutExecution,
    "payout_items": PayoutItem,
    "payout_report_keys": PayoutReportKey,
    "pending_signups": PendingSignup,
    "rate_limit_counters": RateLimitCounter,
    "agreement_versions": AgreementVersion,
    "app_logos": AppLogo,
    "processor_connections": ProcessorConnection,
}

#: Repositories whose records may never be replaced (the ledger).
APPEND_ONLY = frozenset({"commission_entries"})


@cache
def mappers() -> Mapping[str, RowMapper[Any]]:
    """One checked mapper per repository; raises at start-up if a model and its table disagree."""
    return {name: RowMapper(model, metadata.tables[name]) for name, model in MODELS.items()}


M = TypeVar("M")


class _Repository(Generic[M]):
    """A unit of work's repository, built the first time the unit of work asks for it.

    A unit of work uses two to ten of its thirty repositories; building all thirty on entry
    was a measurable part of a short request's CPU (``docs/performance.md``). Once built, the
    repository is an ordinary attribute of that unit of work (this descriptor has no
    ``__set__``, so the instance's own attribute wins) until the unit of work ends.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, unit: None, owner: type) -> Self: ...
    @overload
    def __get__(self, unit: SqlUnitOfWork, owner: type) -> SqlRepository[M]: ...
    def __get__(self, unit: SqlUnitOfWork | None, owner: type) -> Self | SqlRepository[M]:
        if unit is None:
            return self
        repository: SqlRepository[M] = SqlRepository(
            unit._require_connection(),
            mappers()[self._name],
            append_only=self._name in APPEND_ONLY,
            read_only=unit.read_only,
        )
        unit.__dict__[self._name] = repository
        return repository


class SqlUnitOfWork:
    """Implements :class:`refcore.ports.UnitOfWork` on one SQLAlchemy connection."""

    #: Its repositories refuse writes (a read unit of work whose database would not refuse them).
    read_only = False
    #: Its transaction begins as a read's (:mod:`refcore_sqlstore.read_only_begin`).
    begins_read_only = False

    users = _Repository[User]()
    sessions = _Repository[Session]()
    organizations = _Repository[Organization]()
    memberships = _Repository[Membership]()
    apps = _Repository[App]()
    api_keys = _Repository[ApiKey]()
    programs = _Repository[Program]()
    program_terms = _Repository[ProgramTerms]()
    program_affiliates = _Repository[ProgramAffiliate]()
    links = _Repository[Link]()
    clicks = _Repository[Click]()
    customers = _Repository[Customer]()
    referrals = _Repository[Referral]()
    payments = _Repository[Payment]()
    refunds = _Repository[Refund]()
    disputes = _Repository[Dispute]()
    commission_entries = _Repository[CommissionEntry]()
    events = _Repository[Event]()
    webhook_endpoints = _Repository[WebhookEndpoint]()
    webhook_deliveries = _Repository[WebhookDelivery]()
    payout_details = _Repository[PayoutDetails]()
    payout_requests = _Repository[PayoutRequest]()
    payout_batches = _Repository[PayoutBatch]()
    payout_executions = _Repository[PayoutExecution]()
    payout_items = _Repository[PayoutItem]()
    payout_report_keys = _Repository[PayoutReportKey]()
    pending_signups = _Repository[PendingSignup]()
    rate_limit_counters = _Repository[RateLimitCounter]()
    agreement_versions = _Repository[AgreementVersion]()
    app_logos = _Repository[AppLogo]()
    processor_connections = _Repository[ProcessorConnection]()

    def __init__(self, engine: Engine, kept: KeptConnections | None = None) -> None:
        self._engine = engine
        self._kept = kept
        self._connection: Connection | None = None

    def _connect(self) -> Connection:
        """A connection the store keeps between units of work, or one from the pool."""
        return self._engine.connect() if self._kept is None else self._kept.take()

    def __enter__(self) -> Self:
        with database_errors():
            connection = self._connect()
            token = READ_ONLY_BEGIN.set(self.begins_read_only)
            try:
                connection.begin()
            except BaseException:
                connection.close()
                raise
            finally:
                READ_ONLY_BEGIN.reset(token)
        self._forget_repositories()
        self._connection = connection
        return self

    def _forget_repositories(self) -> None:
        """Drop the repositories built on an earlier connection of this object."""
        for name in MODELS.keys() & self.__dict__.keys():
            del self.__dict__[name]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        self._forget_repositories()
        if exc is not None and is_stale_plan(exc):
            connection.invalidate()  # and with it the statements prepared on it (errors.py)
        try:
            with database_errors():
                self._release(connection)
        except InternalError:
            if exc is None:
                raise

    def _release(self, connection: Connection) -> None:
        """End the unit of work's connection: giving it back or closing it rolls back whatever
        was not committed."""
        if self._kept is None:
            connection.close()
        else:
            self._kept.give_back(connection)

    def _require_connection(self) -> Connection:
        if self._connection is None:
            raise RuntimeError("the unit of work is not open")
        return self._connection

    def metrics(self) -> SqlMetrics:
        return SqlMetrics(self._require_connection(), mappers())

    def ledger(self) -> SqlLedgerReads:
        return SqlLedgerReads(self._require_connection())

    def look_up(self, *lookups: Lookup[Any]) -> Found:
        return joined_lookups.look_up(self._require_connection(), lookups, mappers())

    def commit(self) -> None:
        """Make every write durable and visible at once. Later writes start a new transaction."""
        connection = self._require_connection()
        with database_errors():
            try:
                connection.commit()
            except BaseException:
                # A refused COMMIT (a deferred foreign key on SQLite) can leave the database's
                # transaction open while SQLAlchemy considers it finished and would return the
                # connection to the pool as is. Discard that connection instead.
                connection.invalidate()
                raise

    def rollback(self) -> None:
        connection = self._require_connection()
        with database_errors():
            connection.rollback()
