"""Seeding a year of ledger history fast, for the scaling reads (10 thousand to 1 million entries).

Rows go straight into the store's own tables with bulk ``INSERT``s through SQLAlchemy Core, but
each row is first built as the refcore model and turned into a row by the store's own mapper,
so a seeded row is exactly what the services would have written and a schema change breaks the
seeder loudly rather than silently. The history is consistent, the way the services keep it:

- every payment has its customer (ten payments each), referral and click, attributed to one of
  the program's affiliates (round-robin), and earns ``floor(amount * 20%)``;
- one payment in ten is half refunded five days later: a refund row, ``refunded_amount``, and
  the reversal entry the ledger formula asks for;
- one recent payment in two hundred has an open dispute (its entries are ``held``);
- every 30 days each affiliate was paid the entries approved by then: a succeeded payout
  execution with one payout item per entry, amount the sum of its items. Entries of the last
  30 days are unpaid (``approved`` or ``pending`` depending on their hold).

Timestamps are spread uniformly over the last 360 days, and IDs are time-ordered from them as
the server's generator makes them.
"""

from __future__ import annotations

import base64
import random
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, insert

from refcore.models import (
    Click,
    CommissionEntry,
    Customer,
    Dispute,
    DisputeStatus,
    EntryKind,
    Mode,
    Payment,
    Referral,
    Refund,
    RevenueSource,
)
from refcore.models.payout import PayoutExecution, PayoutExecutionStatus, PayoutItem
from refcore.rules.commission import ledger_target
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.unit_of_work import mappers

HISTORY_DAYS = 360
HOLD_DAYS = 30
PAYOUT_EVERY_DAYS = 30
PAYMENTS_PER_CUSTOMER = 10
CHUNK_PAYMENTS = 20_000
#: The steady affiliate takes every fifth new subscriber until it has this many entries, then
#: none: its history stays the same size while the database grows.
STEADY_ENTRIES = 1_000


_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_FROM_BASE32 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD)


def time_ordered_id(prefix: str, at: datetime, rng: random.Random) -> str:
    """The layout of :class:`refcore.identifiers.TimeOrderedIds` (48-bit ms + 80 random bits, 26
    Crockford base-32 digits) for a moment in the past; that generator never goes back in time.
    The top 10 digits hold the milliseconds, the last 16 exactly the 80 random bits."""
    millis = int(at.timestamp() * 1000)
    head = []
    for _ in range(10):
        millis, digit = divmod(millis, 32)
        head.append(_CROCKFORD[digit])
    tail = base64.b32encode(rng.randbytes(10)).decode("ascii").translate(_FROM_BASE32)
    return f"{prefix}_{''.join(reversed(head))}{tail}"


def _pragmas(connection: Connection, **values: str) -> None:
    driver = connection.connection.driver_connection
    assert driver is not None
    for name, value in values.items():
        driver.execute(f"PRAGMA {name} = {value}")


class Seeder:
    """Adds history to one program of one App; :meth:`grow_to` is called with rising targets."""

    def __init__(
        self,
        database_url: str,
        *,
        app_id: str,
        program_id: str,
        affiliate_ids: list[str],
        link_ids: list[str],
        steady: tuple[str, str] | None = None,
        bps: int,
        now: datetime,
    ) -> None:
        self._engine: Engine = create_store_engine(normalise_url(database_url), pool_size=1, max_overflow=0)
        self.app_id = app_id
        self.program_id = program_id
        self.affiliates = list(zip(affiliate_ids, link_ids, strict=True))
        self.steady = steady
        self.steady_id = steady[0] if steady else None
        self.steady_entries = 0
        self._customers = 0
        self.bps = bps
        self.now = now
        self.entries = 0
        self._payments = 0
        self._random = random.Random(9)
        self._mappers = mappers()
        #: The customer being billed now, their next renewal, and how many renewals are left.
        self._customer: tuple[Customer, Referral, datetime, int] | None = None

    def close(self) -> None:
        self._engine.dispose()

    def _id(self, prefix: str, at: datetime) -> str:
        return time_ordered_id(prefix, at, self._random)

    def grow_to(self, target_entries: int, progress: Callable[[str], None] = print) -> None:
        while self.entries < target_entries:
            self._chunk(min(CHUNK_PAYMENTS, target_entries - self.entries), target_entries)
            progress(f"    seeded {self.entries:,} entries")

    def _chunk(self, wanted: int, target: int) -> None:
        rows: dict[str, list[dict[str, Any]]] = defaultdict(list)

        def add(table: str, model: object) -> None:
            rows[table].append(self._mappers[table].to_row(model))

        paid_by: dict[tuple[str, int], list[CommissionEntry]] = defaultdict(list)
        made = 0
        live = Mode.LIVE
        while made < wanted and self.entries + made < target:
            n = self._payments
            self._payments += 1
            if (
                self._customer is None
                or self._customer[3] == 0
                or self._customer[2] > self.now
                or (
                    self._customer[1].program_affiliate_id == self.steady_id
                    and self.steady_entries >= STEADY_ENTRIES
                )
            ):
                self._customer = self._new_customer(add, n)
            customer, referral, at, left = self._customer
            self._customer = (customer, referral, at + timedelta(days=30), left - 1)
            affiliate_id = referral.program_affiliate_id
            assert affiliate_id is not None
            amount = self._random.randrange(1_000, 50_000)
            commission = amount * self.bps // 10_000
            available_at = at + timedelta(days=HOLD_DAYS)
            refunded = amount // 2 if n % 10 == 3 and at + timedelta(days=5) < self.now else 0
            disputed = 0
            if refunded == 0 and n % 200 == 7 and at > self.now - timedelta(days=HOLD_DAYS):
                disputed = min(1_000, amount)
            payment = Payment(
                id=self._id("txn", at),
                app_id=self.app_id,
                mode=live,
                payment_id=f"seed-payment-{n}",
                customer_id=customer.id,
                program_id=self.program_id,
                referral_id=referral.id,
                amount=amount,
                currency="usd",
                attributed=True,
                commission_amount=commission,
                available_at=available_at,
                source=RevenueSource.API,
                created_at=at,
                program_affiliate_id=affiliate_id,
                refunded_amount=refunded,
                disputed_amount=disputed,
                open_dispute_count=1 if disputed else 0,
            )
            add("payments", payment)
            entries = [
                CommissionEntry(
                    id=self._id("com", at),
                    app_id=self.app_id,
                    mode=live,
                    program_id=self.program_id,
                    program_affiliate_id=affiliate_id,
                    transaction_id=payment.id,
                    source_id=payment.id,
                    kind=EntryKind.EARNED,
                    amount=commission,
                    currency="usd",
                    available_at=available_at,
                    created_at=at,
                )
            ]
            if refunded:
                later = at + timedelta(days=5)
                refund = Refund(
                    id=self._id("txn", later),
                    app_id=self.app_id,
                    mode=live,
                    refund_id=f"seed-refund-{n}",
                    payment_id=payment.payment_id,
                    transaction_id=payment.id,
                    amount=refunded,
                    created_at=later,
                )
                add("refunds", refund)
                step = ledger_target(commission, amount, refunded, 0) - commission
                if step:
                    entries.append(
                        CommissionEntry(
                            id=self._id("com", later),
                            app_id=self.app_id,
                            mode=live,
                            program_id=self.program_id,
                            program_affiliate_id=affiliate_id,
                            transaction_id=payment.id,
                            source_id=refund.id,
                            kind=EntryKind.REVERSAL,
                            amount=step,
                            currency="usd",
                            available_at=available_at,
                            created_at=later,
                        )
                    )
            if disputed:
                opened = at + timedelta(hours=1)
                add(
                    "disputes",
                    Dispute(
                        id=self._id("dsp", opened),
                        app_id=self.app_id,
                        mode=live,
                        dispute_id=f"seed-dispute-{n}",
                        payment_id=payment.payment_id,
                        transaction_id=payment.id,
                        status=DisputeStatus.OPENED,
                        amount=disputed,
                        created_at=opened,
                        updated_at=opened,
                    ),
                )
            for entry in entries:
                add("commission_entries", entry)
                # Paid in the first payout on or after the hold: payouts every 30 days back from now.
                days_ago = (self.now - max(entry.available_at, entry.created_at)).total_seconds() / 86400
                if days_ago >= PAYOUT_EVERY_DAYS and not disputed:
                    paid_in = int(days_ago // PAYOUT_EVERY_DAYS)
                    paid_by[(affiliate_id, paid_in)].append(entry)
            made += len(entries)
            if self.steady is not None and affiliate_id == self.steady[0]:
                self.steady_entries += len(entries)
        self._insert(rows, paid_by)
        self.entries += made

    def _new_customer(
        self, add: Callable[[str, object], None], n: int
    ) -> tuple[Customer, Referral, datetime, int]:
        """A subscriber: signed up on a random day of the year, then billed every 30 days."""
        self._customers += 1
        if self.steady is not None and self.steady_entries < STEADY_ENTRIES and self._customers % 5 == 0:
            affiliate_id, link_id = self.steady
        else:
            affiliate_id, link_id = self.affiliates[self._customers % len(self.affiliates)]
        first = self.now - timedelta(seconds=self._random.uniform(7200, HISTORY_DAYS * 86400))
        signup = first - timedelta(hours=1)
        click = Click(
            id=self._id("clk", signup),
            app_id=self.app_id,
            mode=Mode.LIVE,
            program_id=self.program_id,
            program_affiliate_id=affiliate_id,
            link_id=link_id,
            created_at=signup,
            page="https://shop.example/?via=seed",
        )
        customer = Customer(
            id=self._id("rcus", signup),
            app_id=self.app_id,
            mode=Mode.LIVE,
            created_at=signup,
            external_customer_id=f"seed-customer-{n}",
            email=f"seed-{n}@customers.example",
        )
        referral = Referral(
            id=self._id("ref", signup),
            app_id=self.app_id,
            mode=Mode.LIVE,
            customer_id=customer.id,
            program_id=self.program_id,
            attributed=True,
            created_at=signup,
            program_affiliate_id=affiliate_id,
            click_id=click.id,
            attribution_source="click",
        )
        add("clicks", click)
        add("customers", customer)
        add("referrals", referral)
        return customer, referral, first, PAYMENTS_PER_CUSTOMER

    def _insert(
        self, rows: dict[str, list[dict[str, Any]]], paid_by: dict[tuple[str, int], list[CommissionEntry]]
    ) -> None:
        def add(table: str, model: object) -> None:
            rows[table].append(self._mappers[table].to_row(model))

        for (affiliate_id, periods_ago), paid in sorted(paid_by.items()):
            total = sum(e.amount for e in paid)
            if total <= 0:
                continue  # a payout is always positive: these stay approved and unpaid
            at = self.now - timedelta(days=periods_ago * PAYOUT_EVERY_DAYS)
            execution = PayoutExecution(
                id=self._id("pex", at),
                app_id=self.app_id,
                program_id=self.program_id,
                program_affiliate_id=affiliate_id,
                amount=total,
                currency="usd",
                status=PayoutExecutionStatus.SUCCEEDED,
                created_at=at,
                completed_at=at,
                completed_manually=True,
            )
            add("payout_executions", execution)
            for entry in paid:
                add(
                    "payout_items",
                    PayoutItem(
                        id=self._id("pit", at),
                        app_id=self.app_id,
                        execution_id=execution.id,
                        entry_id=entry.id,
                        program_affiliate_id=affiliate_id,
                        amount=entry.amount,
                        created_at=at,
                        active_entry_id=entry.id,
                    ),
                )
        order = (
            "clicks",
            "customers",
            "referrals",
            "payments",
            "refunds",
            "disputes",
            "commission_entries",
            "payout_executions",
            "payout_items",
        )
        with self._engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                # The rows are consistent by construction; checking every reference and syncing
                # to disk would only slow the seeding (the server's own connections do both).
                # Set on the driver's connection: outside any transaction, as SQLite requires.
                # A large page cache: rows arrive in random time order, so the indexes are
                # written all over; without it each insert reads its pages back from the file.
                _pragmas(connection, foreign_keys="OFF", synchronous="OFF", cache_size="-1048576")
            try:
                with connection.begin():
                    self._write(connection, rows, order)
            finally:
                if sqlite:
                    _pragmas(connection, foreign_keys="ON", synchronous="FULL")

    def _write(
        self, connection: Connection, rows: dict[str, list[dict[str, Any]]], order: tuple[str, ...]
    ) -> None:
        for table in order:
            if rows[table]:
                # In ID order, so that each index is filled from left to right within a chunk.
                ordered = sorted(rows[table], key=lambda row: str(row["id"]))
                connection.execute(insert(self._mappers[table].table), ordered)
