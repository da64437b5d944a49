"""The schema: one SQLAlchemy Core ``Table`` per model, one column per model field.

Conventions (the mapper in :mod:`refcore_sqlstore.mapping` relies on them):

- a column has the name of its model field; the one exception is ``Program.commission``, stored
  as ``commission_type`` and ``commission_value``;
- enums are stored as their string values, booleans as booleans, money as integers;
- datetimes are :class:`~refcore_sqlstore.types.UtcDateTime`; ``Event.data`` and
  ``WebhookEndpoint.events`` are JSON.

Integrity lives here as well as in the core: primary keys, the unique keys that make every
caller-chosen identity idempotent (the same set as ``refcore_memstore.database.UNIQUE_KEYS``;
SQL ``NULL`` never clashes, so customers without ``external_customer_id`` do not collide),
foreign keys (deferred to commit, so a unit of work may add rows in any order) and a few checks
that the core's rules must never break (a payment's refunds and open or lost disputes never
exceed it). The ledger is append-only: the repository refuses ``replace`` and the migration adds
a trigger that rejects ``UPDATE`` and ``DELETE`` on ``commission_entries``.

Every index ends in ``id`` so that the list, cursor and balance queries (equality filters ordered
by ID) are answered from one index range, whatever the size of history.

This module must agree with the migrations; ``tests/sqlstore/test_migrations.py`` checks it with
Alembic's autogenerate comparison on SQLite and PostgreSQL.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from refcore_sqlstore.types import Id, UtcDateTime

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _pk() -> Column[str]:
    return Column("id", Id, primary_key=True)


def _ref(name: str, table: str, *, nullable: bool = False) -> Column[str]:
    """A reference to ``table.id``, checked at commit (``DEFERRABLE INITIALLY DEFERRED``)."""
    return Column(
        name,
        Id,
        ForeignKey(f"{table}.id", deferrable=True, initially="DEFERRED"),
        nullable=nullable,
    )


def _text(name: str, *, nullable: bool = False) -> Column[str]:
    return Column(name, Text, nullable=nullable)


def _int(name: str, *, nullable: bool = False) -> Column[int]:
    return Column(name, Integer, nullable=nullable)


#: A sum of money: ``BIGINT`` on PostgreSQL. One amount fits a signed 32-bit integer (interface
#: 2.2), a sum of them need not: a payout of two such payments' commissions already does not.
#: SQLite's ``INTEGER`` is already 64-bit, so it keeps that name (migration 0007).
_MONEY_SUM = BigInteger().with_variant(Integer(), "sqlite")


def _money_sum(name: str) -> Column[int]:
    return Column(name, _MONEY_SUM, nullable=False)


def _bool(name: str) -> Column[bool]:
    return Column(name, Boolean, nullable=False)


def _time(name: str, *, nullable: bool = False) -> Column[object]:
    return Column(name, UtcDateTime, nullable=nullable)


def _activity_indexes(*filters: str) -> list[Index]:
    """Indexes for the lists of one kind of activity: one App and mode, newest first, optionally
    filtered by one more field. The filter sits between ``(app_id, mode)`` and ``id`` so that one
    index range answers the whole query in ID order (and SQLite, without statistics, prefers
    the index with the most equality columns, which is this one)."""
    return [Index(None, "app_id", "mode", "id")] + [
        Index(None, "app_id", "mode", name, "id") for name in filters
    ]


def _mode_check() -> CheckConstraint:
    return CheckConstraint("mode IN ('test', 'live')", name="mode")


# -- tenancy ---------------------------------------------------------------------------------

users = Table(
    "users",
    metadata,
    _pk(),
    _text("email"),
    _time("created_at"),
    UniqueConstraint("email"),
)

sessions = Table(
    "sessions",
    metadata,
    _pk(),
    _ref("user_id", "users"),
    _text("token_digest"),
    _time("created_at"),
    UniqueConstraint("token_digest"),
)

organizations = Table(
    "organizations",
    metadata,
    _pk(),
    _text("name"),
    _time("created_at"),
)

memberships = Table(
    "memberships",
    metadata,
    _pk(),
    _ref("organization_id", "organizations"),
    _ref("user_id", "users"),
    _text("role"),
    _time("created_at"),
    UniqueConstraint("organization_id", "user_id"),
    Index(None, "user_id", "id"),
)

apps = Table(
    "apps",
    metadata,
    _pk(),
    _ref("organization_id", "organizations"),
    _text("name"),
    _time("created_at"),
    _text("live_revenue_source", nullable=True),
    _bool("processor_connected_test"),
    _bool("processor_connected_live"),
    Index(None, "organization_id", "id"),
)

api_keys = Table(
    "api_keys",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("kind"),
    _text("mode"),
    _text("digest"),
    _text("last4"),
    _time("created_at"),
    _time("revoked_at", nullable=True),
    _ref("program_affiliate_id", "program_affiliates", nullable=True),
    UniqueConstraint("digest"),
    Index(None, "app_id", "id"),
    _mode_check(),
)

# -- programs and affiliates -----------------------------------------------------------------

programs = Table(
    "programs",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("name"),
    _text("slug"),
    _text("currency"),
    _text("commission_type"),
    _int("commission_value"),
    _time("created_at"),
    _int("commission_duration_months", nullable=True),
    _int("attribution_window_days"),
    _int("hold_days"),
    _int("minimum_payout"),
    _bool("auto_approve"),
    _bool("promotion_code_fallback"),
    _text("status"),
    UniqueConstraint("slug"),
    Index(None, "app_id", "id"),
    CheckConstraint("commission_type IN ('percent', 'fixed')", name="commission_type"),
    CheckConstraint("commission_value >= 0", name="commission_value"),
)

program_terms = Table(
    "program_terms",
    metadata,
    _pk(),
    _ref("program_id", "programs"),
    _text("text"),
    _time("created_at"),
    Index(None, "program_id", "id"),
)

program_affiliates = Table(
    "program_affiliates",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("program_id", "programs"),
    _text("email"),
    _text("name"),
    _text("status"),
    _time("created_at"),
    _text("status_before_disable", nullable=True),
    UniqueConstraint("program_id", "email"),
    Index(None, "program_id", "id"),
    Index(None, "program_id", "status", "id"),
)

links = Table(
    "links",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("program_id", "programs"),
    _ref("program_affiliate_id", "program_affiliates"),
    _text("code"),
    _time("created_at"),
    _text("name", nullable=True),
    _time("deleted_at", nullable=True),
    # Codes are stored lower-case, which makes this key case-insensitive (decisions 2).
    UniqueConstraint("code"),
    # An affiliate's current links. Partial, because ``deleted_at IS NULL`` is not an equality
    # a database can use to keep the index in ``id`` order.
    Index(
        "ix_links_current_program_affiliate_id_id",
        "program_affiliate_id",
        "id",
        sqlite_where=text("deleted_at IS NULL"),
        postgresql_where=text("deleted_at IS NULL"),
    ),
    # All of an affiliate's links, deleted ones included: the count its key may create
    # (``services/affiliate_links.py``, migration 0016).
    Index(None, "program_affiliate_id"),
    CheckConstraint("code = lower(code)", name="code_lower_case"),
)

# -- tracking activity -----------------------------------------------------------------------

clicks = Table(
    "clicks",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _ref("program_id", "programs"),
    _ref("program_affiliate_id", "program_affiliates"),
    _ref("link_id", "links"),
    _time("created_at"),
    _text("page", nullable=True),
    _text("referrer", nullable=True),
    _text("visitor_ip", nullable=True),
    _text("visitor_user_agent", nullable=True),
    *_activity_indexes("program_id", "program_affiliate_id", "link_id"),
    _mode_check(),
)

customers = Table(
    "customers",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _time("created_at"),
    _text("external_customer_id", nullable=True),
    _text("email", nullable=True),
    UniqueConstraint("app_id", "mode", "external_customer_id"),
    *_activity_indexes("email"),
    _mode_check(),
)

referrals = Table(
    "referrals",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _ref("customer_id", "customers"),
    _ref("program_id", "programs"),
    _bool("attributed"),
    _time("created_at"),
    _ref("program_affiliate_id", "program_affiliates", nullable=True),
    _ref("click_id", "clicks", nullable=True),
    _text("attribution_source", nullable=True),
    _text("promotion_code", nullable=True),
    UniqueConstraint("customer_id"),
    *_activity_indexes("program_id", "program_affiliate_id", "click_id"),
    _mode_check(),
)

# -- revenue and ledger ----------------------------------------------------------------------

payments = Table(
    "payments",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _text("payment_id"),
    # None for a processor payment without the identify metadata (unattributed, docs/processor.md).
    _ref("customer_id", "customers", nullable=True),
    _ref("program_id", "programs", nullable=True),
    _ref("referral_id", "referrals", nullable=True),
    _int("amount"),
    _text("currency"),
    _bool("attributed"),
    _int("commission_amount"),
    _time("available_at"),
    _text("source"),
    _time("created_at"),
    _ref("program_affiliate_id", "program_affiliates", nullable=True),
    _int("refunded_amount"),
    _int("disputed_amount"),
    _int("lost_amount"),
    _int("open_dispute_count"),
    UniqueConstraint("app_id", "mode", "payment_id"),
    *_activity_indexes("program_id", "program_affiliate_id", "customer_id"),
    _mode_check(),
    CheckConstraint(
        "amount >= 0 AND refunded_amount >= 0 AND disputed_amount >= 0 AND lost_amount >= 0"
        " AND open_dispute_count >= 0 AND commission_amount >= 0",
        name="non_negative",
    ),
    # The consumption rule (decisions 4), enforced by the database too.
    CheckConstraint("refunded_amount + disputed_amount <= amount", name="consumption_within_amount"),
)

refunds = Table(
    "refunds",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _text("refund_id"),
    _text("payment_id"),
    _ref("transaction_id", "payments"),
    _int("amount"),
    _time("created_at"),
    UniqueConstraint("app_id", "mode", "refund_id"),
    *_activity_indexes("transaction_id", "payment_id"),
    _mode_check(),
    CheckConstraint("amount > 0", name="positive_amount"),
)

disputes = Table(
    "disputes",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _text("dispute_id"),
    _text("payment_id"),
    _ref("transaction_id", "payments"),
    _text("status"),
    _int("amount"),
    _time("created_at"),
    _time("updated_at"),
    _bool("inquiry"),
    UniqueConstraint("app_id", "mode", "dispute_id"),
    *_activity_indexes("transaction_id", "payment_id", "status"),
    _mode_check(),
    CheckConstraint("amount > 0", name="positive_amount"),
)

commission_entries = Table(
    "commission_entries",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _ref("program_id", "programs"),
    _ref("program_affiliate_id", "program_affiliates"),
    _ref("transaction_id", "payments"),
    # The payment, refund or dispute that caused the entry: one of three tables, so no foreign key.
    Column("source_id", Id, nullable=False),
    _text("kind"),
    _int("amount"),
    _text("currency"),
    _time("available_at"),
    _time("created_at"),
    *_activity_indexes("program_id", "program_affiliate_id", "transaction_id"),
    # A payment's entries (the balance triggers hold and release them with its disputes) and an
    # affiliate's Live entries (balances, payouts).
    Index(None, "transaction_id", "id"),
    Index(None, "program_affiliate_id", "mode", "id"),
    # The entries of one affiliate that become available within one hour (the balance's edge).
    Index(None, "program_affiliate_id", "mode", "available_at"),
    _mode_check(),
)

# A projection of the ledger, kept by database triggers (migrations 0004, 0005): per affiliate,
# mode and UTC month, day, hour or minute of ``available_at``, the sum of the entries no live or
# succeeded payout holds, split into those whose payment has an open dispute (``held_amount``) and
# the rest (``open_amount``). A balance reads these rows instead of the affiliate's whole history; see
# :mod:`refcore_sqlstore.ledger`. Never written by the application. The columns its triggers watch
# are listed in :data:`refcore_sqlstore.joined_writes.TRIGGER_COLUMNS` (their updates are never
# joined with other writes).
affiliate_balance_buckets = Table(
    "affiliate_balance_buckets",
    metadata,
    Column("program_affiliate_id", Id, primary_key=True),
    Column("mode", Text, primary_key=True),
    # ``month``: ``YYYY-MM``; ``day``: ``YYYY-MM-DD``; ``hour``: ``YYYY-MM-DD HH``; ``minute``:
    # ``YYYY-MM-DD HH:MM`` (UTC), so text order is time order.
    Column("grain", Text, primary_key=True),
    Column("bucket", Text, primary_key=True),
    Column("open_amount", BigInteger, nullable=False),
    Column("held_amount", BigInteger, nullable=False),
    CheckConstraint("grain IN ('month', 'day', 'hour', 'minute')", name="grain"),
    # Pruning finds the past rows of one grain through it (``bucket_pruning``, migration 0006).
    Index(None, "grain", "bucket"),
)

#: Per affiliate, the sums of its succeeded (``paid_amount``) and of its prepared or ready
#: (``processing_amount``) payout executions, so that a balance reads one row however many payouts
#: the affiliate had (:mod:`refcore_sqlstore.ledger`). Written by the triggers of migration 0009
#: on ``payout_executions`` only, never by the application.
affiliate_payout_sums = Table(
    "affiliate_payout_sums",
    metadata,
    Column("program_affiliate_id", Id, primary_key=True),
    Column("paid_amount", BigInteger, nullable=False),
    Column("processing_amount", BigInteger, nullable=False),
)

# -- events and webhooks ---------------------------------------------------------------------

events = Table(
    "events",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("type"),
    _bool("livemode"),
    _time("created_at"),
    Column("data", JSON, nullable=False),
    _time("claimed_at", nullable=True),
    _time("delivered_at", nullable=True),
    # GET /v1/events: a mode's events, and a mode's events of one type, one range each (0017,
    # which dropped the (app_id, id) index no statement read).
    Index(None, "app_id", "livemode", "id"),
    Index(None, "app_id", "livemode", "type", "id"),
    # The outbox: only undelivered events, oldest first, whatever the size of history.
    Index(
        "ix_events_undelivered",
        "id",
        sqlite_where=text("delivered_at IS NULL"),
        postgresql_where=text("delivered_at IS NULL"),
    ),
)

webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("url"),
    Column("events", JSON, nullable=False),
    _bool("disabled"),
    _text("secret_ciphertext"),
    _time("created_at"),
    _time("updated_at"),
    _time("deleted_at", nullable=True),
    UniqueConstraint("app_id"),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("event_id", "events"),
    _text("event_type"),
    _text("status"),
    _int("duration_ms"),
    _time("created_at"),
    _text("url"),
    _bool("listed_in_test"),
    _bool("listed_in_live"),
    _int("http_status", nullable=True),
    _text("error", nullable=True),
    _text("response_body", nullable=True),
    UniqueConstraint("event_id"),
    Index(None, "app_id", "id"),
    # Each mode's delivery history, one index range each (migration 0014).
    Index(None, "app_id", "listed_in_test", "id"),
    Index(None, "app_id", "listed_in_live", "id"),
)

# -- payouts ---------------------------------------------------------------------------------

payout_details = Table(
    "payout_details",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("program_id", "programs"),
    _ref("program_affiliate_id", "program_affiliates"),
    _text("method"),
    _time("created_at"),
    _time("updated_at"),
    _text("email", nullable=True),
    _text("account_holder", nullable=True),
    _text("iban", nullable=True),
    _text("notes", nullable=True),
    UniqueConstraint("program_affiliate_id"),
    Index(None, "program_id", "id"),
)

payout_batches = Table(
    "payout_batches",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("program_id", "programs"),
    _text("status"),
    _money_sum("total"),
    _text("currency"),
    _int("execution_count"),
    _time("created_at"),
    _time("dispatched_at", nullable=True),
    _time("canceled_at", nullable=True),
    Index(None, "program_id", "id"),
    Index(None, "app_id", "id"),
)

payout_executions = Table(
    "payout_executions",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("program_id", "programs"),
    _ref("program_affiliate_id", "program_affiliates"),
    _money_sum("amount"),
    _text("currency"),
    _text("status"),
    _time("created_at"),
    _ref("batch_id", "payout_batches", nullable=True),
    _time("completed_at", nullable=True),
    _text("idempotency_key", nullable=True),
    _bool("completed_manually"),
    _text("outcome_reason", nullable=True),
    # Set while the payout is in flight: one payout in flight per affiliate.
    Column("live_program_affiliate_id", Id, nullable=True),
    UniqueConstraint("live_program_affiliate_id"),
    Index(None, "batch_id", "id"),
    # Finds an affiliate's payouts by status (mark-paid's ready one). It ends in ``amount`` since
    # the balance summed payouts through it (migration 0005); the balance now reads
    # ``affiliate_payout_sums`` instead (migration 0009), and the index is left as it is.
    Index(None, "program_affiliate_id", "status", "id", "amount"),
    Index(None, "program_id", "id"),
    CheckConstraint("amount > 0", name="positive_amount"),
)

payout_requests = Table(
    "payout_requests",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("program_id", "programs"),
    _ref("program_affiliate_id", "program_affiliates"),
    _money_sum("amount"),
    _text("currency"),
    _text("status"),
    _time("created_at"),
    _time("decided_at", nullable=True),
    _ref("payout_execution_id", "payout_executions", nullable=True),
    # Set while the request is open: one open request per affiliate.
    Column("open_program_affiliate_id", Id, nullable=True),
    UniqueConstraint("open_program_affiliate_id"),
    Index(None, "program_id", "id"),
    Index(None, "program_affiliate_id", "id"),
    Index(None, "app_id", "id"),
)

payout_items = Table(
    "payout_items",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("execution_id", "payout_executions"),
    _ref("entry_id", "commission_entries"),
    _ref("program_affiliate_id", "program_affiliates"),
    _int("amount"),
    _time("created_at"),
    # Set while the execution is live or succeeded: an entry is in at most one such payout.
    Column("active_entry_id", Id, nullable=True),
    UniqueConstraint("active_entry_id"),
    Index(None, "execution_id", "id"),
    Index(None, "entry_id", "id"),
    Index(None, "program_affiliate_id", "id"),
)

payout_report_keys = Table(
    "payout_report_keys",
    metadata,
    # The execution the key reported: one report settles an execution.
    Column(
        "id",
        Id,
        ForeignKey("payout_executions.id", deferrable=True, initially="DEFERRED"),
        primary_key=True,
    ),
    _ref("app_id", "apps"),
    _text("idempotency_key"),
    _time("created_at"),
    # A key names one report App-wide (migration 0010); also the index its look-up reads.
    UniqueConstraint("app_id", "idempotency_key"),
)

# -- hosted signups and the App profile (decisions 6) ----------------------------------------

pending_signups = Table(
    "pending_signups",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _ref("program_id", "programs"),
    _text("email"),
    _text("name"),
    # Only the token's SHA-256 digest is stored; confirming looks it up by this key.
    _text("token_digest"),
    _time("expires_at"),
    _time("created_at"),
    _time("confirmed_at", nullable=True),
    _ref("program_affiliate_id", "program_affiliates", nullable=True),
    UniqueConstraint("token_digest"),
    Index(None, "program_id", "id"),
)

rate_limit_counters = Table(
    "rate_limit_counters",
    metadata,
    _pk(),
    _text("key"),
    _time("window_start"),
    _int("count"),
    _time("created_at"),
    # One counter per key and window: concurrent first uses race on this key, not on a count.
    UniqueConstraint("key", "window_start"),
    CheckConstraint("count >= 0", name="non_negative_count"),
)

agreement_versions = Table(
    "agreement_versions",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("text"),
    _time("created_at"),
    Index(None, "app_id", "id"),
)

app_logos = Table(
    "app_logos",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _time("created_at"),
    _time("updated_at"),
    _text("content_type", nullable=True),
    Column("data", LargeBinary, nullable=True),
    _text("sha256", nullable=True),
    _int("size"),
    UniqueConstraint("app_id"),
    CheckConstraint("size >= 0 AND size <= 1048576", name="size_at_most_1_mib"),
)

# -- aggregate reads (setup status and overview; refcore.ports.metrics) ------------------------
# Counts and sums over a time range of one App and mode: each query is one range of one of these
# indexes, whatever the size of history. (The list indexes above end in ``id``; these end in the
# time the range is taken on.)

Index(None, clicks.c.app_id, clicks.c.mode, clicks.c.created_at)
Index(None, referrals.c.app_id, referrals.c.mode, referrals.c.attributed, referrals.c.created_at)
Index(None, payments.c.app_id, payments.c.mode, payments.c.attributed, payments.c.created_at)
Index(
    None,
    commission_entries.c.app_id,
    commission_entries.c.mode,
    commission_entries.c.kind,
    commission_entries.c.created_at,
)
Index(None, payout_executions.c.app_id, payout_executions.c.status, payout_executions.c.completed_at)

# -- payment-processor connections -----------------------------------------------------------

processor_connections = Table(
    "processor_connections",
    metadata,
    _pk(),
    _ref("app_id", "apps"),
    _text("mode"),
    _text("account_id"),
    _text("webhook_secret_ciphertext"),
    _text("install_nonce"),
    _time("created_at"),
    _time("connected_at"),
    _time("disconnected_at", nullable=True),
    # Set while the connection is active: one per App and mode; an account's may be several
    # (refcore.models.processor).
    _text("active_app_mode", nullable=True),
    _text("active_account_mode", nullable=True),
    UniqueConstraint("install_nonce"),
    UniqueConstraint("active_app_mode"),
    Index(None, "active_account_mode"),
    Index(None, "app_id", "id"),
    _mode_check(),
)
