"""The balance projection (``affiliate_balance_buckets``, migrations 0004, 0005) against a full ledger scan.

The projection is kept by database triggers; a balance reads it instead of the affiliate's whole
history. These tests show that, after any history of entries, dispute state changes and payout
items held, released and deleted, the balance read from the projection equals the one derived
from every entry (the query the store used before the projection, kept here as the oracle), at
any moment, including the edges of a day, an hour and a minute; and that the migrations' backfills
of an existing ledger give the same sums as the triggers do.

Each example runs in one transaction that is rolled back: the triggers and both reads run inside
it, and the foreign keys, checked only at commit, never see the made-up parents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, and_, case, delete, exists, func, insert, select, update

from refcore.models import EntryStatus, Mode
from refcore_sqlstore import SqlStore
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.ledger import SqlLedgerReads
from refcore_sqlstore.migrate import alembic_config
from refcore_sqlstore.tables import affiliate_balance_buckets, commission_entries, payments, payout_items
from tests.sqlstore.raw import engine_of, migrated_to, rolled_back

EXAMPLES = max(30, settings.default.max_examples // 5)
#: New Year: histories around it cross a year, a month, days and hours.
BASE = datetime(2026, 1, 1, tzinfo=UTC)
AFFILIATES = ("pa_one", "pa_two")
PAYMENTS = ("txn_a", "txn_b", "txn_c")
STATUSES = (EntryStatus.HELD, EntryStatus.PENDING, EntryStatus.APPROVED)


def scanned_sums(connection: Connection, affiliate: str, mode: Mode, now: datetime) -> dict[EntryStatus, int]:
    """The oracle: every entry of the affiliate read and classified by the core's precedence
    (a positive entry of a disputed payment is held; a reversal never is)."""
    e, p, i = commission_entries, payments, payout_items
    held = and_(func.coalesce(p.c.open_dispute_count, 0) > 0, e.c.amount > 0)

    def total(condition: Any) -> Any:
        return func.coalesce(func.sum(case((condition, e.c.amount), else_=0)), 0)

    row = connection.execute(
        select(
            total(held),
            total(and_(~held, e.c.available_at > now)),
            total(and_(~held, e.c.available_at <= now)),
        )
        .select_from(e.outerjoin(p, p.c.id == e.c.transaction_id))
        .where(
            e.c.program_affiliate_id == affiliate,
            e.c.mode == mode.value,
            ~exists().where(i.c.active_entry_id == e.c.id),
        )
    ).one()
    return dict(zip(STATUSES, (int(value) for value in row), strict=True))


def projected_sums(
    connection: Connection, affiliate: str, mode: Mode, now: datetime
) -> dict[EntryStatus, int]:
    sums = SqlLedgerReads(connection).status_sums(affiliate, mode, now)
    return {status: sums[status] for status in STATUSES}


def payment_row(payment_id: str, mode: Mode = Mode.LIVE) -> dict[str, Any]:
    return {
        "id": payment_id,
        "app_id": "app_x",
        "mode": mode.value,
        "payment_id": f"ext_{payment_id}",
        "customer_id": None,
        "program_id": None,
        "referral_id": None,
        "amount": 100_000,
        "currency": "usd",
        "attributed": True,
        "commission_amount": 0,
        "available_at": BASE,
        "source": "api",
        "created_at": BASE,
        "program_affiliate_id": None,
        "refunded_amount": 0,
        "disputed_amount": 0,
        "lost_amount": 0,
        "open_dispute_count": 0,
    }


def entry_row(
    entry_id: str, affiliate: str, payment_id: str, amount: int, available_at: datetime, mode: Mode
) -> dict[str, Any]:
    return {
        "id": entry_id,
        "app_id": "app_x",
        "mode": mode.value,
        "program_id": "prog_x",
        "program_affiliate_id": affiliate,
        "transaction_id": payment_id,
        "source_id": payment_id,
        "kind": "commission",
        "amount": amount,
        "currency": "usd",
        "available_at": available_at,
        "created_at": BASE,
    }


def item_row(item_id: str, entry_id: str, active: bool) -> dict[str, Any]:
    return {
        "id": item_id,
        "app_id": "app_x",
        "execution_id": "pex_x",
        "entry_id": entry_id,
        "program_affiliate_id": "pa_one",
        "amount": 1,
        "created_at": BASE,
        "active_entry_id": entry_id if active else None,
    }


# -- histories -------------------------------------------------------------------------------

#: Minutes around BASE: mostly within three days either side, sometimes forty (other months).
minutes = st.one_of(
    st.integers(min_value=-3 * 24 * 60, max_value=3 * 24 * 60),
    st.integers(min_value=-40 * 24 * 60, max_value=40 * 24 * 60),
)
moments = st.builds(
    lambda m, s, us: BASE + timedelta(minutes=m, seconds=s, microseconds=us),
    minutes,
    st.sampled_from((0, 0, 1, 59)),
    st.sampled_from((0, 0, 1, 999_999)),
)
steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("entry"),
            st.sampled_from(AFFILIATES),
            st.sampled_from(PAYMENTS),
            st.integers(min_value=-5_000, max_value=5_000),
            moments,
            st.sampled_from((Mode.LIVE, Mode.LIVE, Mode.TEST)),
        ),
        st.tuples(st.just("disputes"), st.sampled_from(PAYMENTS), st.integers(min_value=0, max_value=2)),
        st.tuples(st.just("item"), st.integers(min_value=0, max_value=30), st.booleans()),
        st.tuples(st.just("toggle"), st.integers(min_value=0, max_value=30)),
        st.tuples(st.just("drop"), st.integers(min_value=0, max_value=30)),
        st.tuples(st.just("check"), st.one_of(moments, st.integers(min_value=0, max_value=30))),
    ),
    max_size=40,
)


class History:
    """Applies one generated history to the tables, tracking what it made."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.entries: list[tuple[str, datetime]] = []
        self.items: list[str] = []
        self.items_made = 0  # item IDs are never reused, even after an item is dropped
        self.active: dict[str, str] = {}  # item ID -> the entry it holds
        for payment_id in PAYMENTS:
            connection.execute(insert(payments).values(payment_row(payment_id)))

    def entry(self, affiliate: str, payment_id: str, amount: int, at: datetime, mode: Mode) -> None:
        entry_id = f"ent_{len(self.entries)}"
        self.connection.execute(
            insert(commission_entries).values(entry_row(entry_id, affiliate, payment_id, amount, at, mode))
        )
        self.entries.append((entry_id, at))

    def disputes(self, payment_id: str, count: int) -> None:
        self.connection.execute(
            update(payments).where(payments.c.id == payment_id).values(open_dispute_count=count)
        )

    def item(self, index: int, active: bool) -> None:
        if not self.entries:
            return
        entry_id = self.entries[index % len(self.entries)][0]
        active = active and entry_id not in self.active.values()  # one live or paid item per entry
        item_id = f"pit_{self.items_made}"
        self.items_made += 1
        self.connection.execute(insert(payout_items).values(item_row(item_id, entry_id, active)))
        self.items.append(item_id)
        if active:
            self.active[item_id] = entry_id

    def toggle(self, index: int) -> None:
        if not self.items:
            return
        item_id = self.items[index % len(self.items)]
        entry_id = self.connection.execute(
            select(payout_items.c.entry_id).where(payout_items.c.id == item_id)
        ).scalar_one()
        if item_id in self.active:
            new_value = None
            del self.active[item_id]
        elif entry_id in self.active.values():
            return
        else:
            new_value = entry_id
            self.active[item_id] = entry_id
        self.connection.execute(
            update(payout_items).where(payout_items.c.id == item_id).values(active_entry_id=new_value)
        )

    def drop(self, index: int) -> None:
        if not self.items:
            return
        item_id = self.items.pop(index % len(self.items))
        self.active.pop(item_id, None)
        self.connection.execute(delete(payout_items).where(payout_items.c.id == item_id))

    def mixed_ledger(self, moment_of: Callable[[int], datetime]) -> None:
        """Sixty entries of both affiliates and modes, entry ``n`` available at ``moment_of(n)``;
        one payment's entries held by two open disputes; some entries in payout items, half of
        those holding their entry: a ledger for a migration to sum into the projection."""
        for n in range(60):
            mode = Mode.LIVE if n % 5 else Mode.TEST
            self.entry(AFFILIATES[n % 2], PAYMENTS[n % 3], 100 + n, moment_of(n), mode)
        self.disputes("txn_b", 2)
        for n in range(0, 60, 4):
            self.item(n, active=n % 8 == 0)

    def moment(self, choice: datetime | int) -> datetime:
        """A generated moment, or exactly the ``available_at`` of an entry (the status's edge)."""
        if isinstance(choice, datetime):
            return choice
        return self.entries[choice % len(self.entries)][1] if self.entries else BASE

    def check(self, choice: datetime | int) -> None:
        now = self.moment(choice)
        for mode in Mode:
            expected = {
                affiliate: scanned_sums(self.connection, affiliate, mode, now) for affiliate in AFFILIATES
            }
            for affiliate in AFFILIATES:
                assert projected_sums(self.connection, affiliate, mode, now) == expected[affiliate], (
                    affiliate,
                    mode,
                    now,
                )
            # Read together: PostgreSQL's one statement for a list of affiliates.
            together = SqlLedgerReads(self.connection).status_sums_of(AFFILIATES, mode, now)
            assert {a: {s: sums[s] for s in STATUSES} for a, sums in together.items()} == expected, (
                mode,
                now,
            )


@pytest.fixture
def connection(sql_store: SqlStore) -> Iterator[Connection]:
    with engine_of(sql_store).connect() as connection:
        yield connection


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=steps, final=moments)
def test_the_projected_balance_equals_a_full_scan_after_any_history(
    connection: Connection, history: list[tuple[Any, ...]], final: datetime
) -> None:
    """Decisions 4, 5: held before pending before approved, entries in a payout left out."""
    with rolled_back(connection):
        world = History(connection)
        for name, *arguments in history:
            getattr(world, name)(*arguments)
        world.check(final)
        for index in range(len(world.entries)):
            world.check(index)


def test_an_entry_becomes_approved_at_its_available_at_to_the_microsecond(connection: Connection) -> None:
    """Pending while ``now < available_at`` (decisions 5), inside the current hour of the read."""
    at = BASE + timedelta(hours=5, minutes=17, microseconds=5)
    with rolled_back(connection):
        world = History(connection)
        world.entry("pa_one", "txn_a", 700, at, Mode.LIVE)
        before = projected_sums(connection, "pa_one", Mode.LIVE, at - timedelta(microseconds=1))
        on_time = projected_sums(connection, "pa_one", Mode.LIVE, at)
        assert (before[EntryStatus.PENDING], before[EntryStatus.APPROVED]) == (700, 0)
        assert (on_time[EntryStatus.PENDING], on_time[EntryStatus.APPROVED]) == (0, 700)
        world.disputes("txn_a", 1)
        held = projected_sums(connection, "pa_one", Mode.LIVE, at)
        assert held == {EntryStatus.HELD: 700, EntryStatus.PENDING: 0, EntryStatus.APPROVED: 0}


def test_the_projection_keeps_one_row_per_bucket_not_per_entry(connection: Connection) -> None:
    """What makes the balance independent of volume: 200 entries over four minutes are seven rows."""
    with rolled_back(connection):
        world = History(connection)
        for n in range(200):
            world.entry("pa_one", "txn_a", 10, BASE + timedelta(minutes=5, seconds=n), Mode.LIVE)
        b = affiliate_balance_buckets
        rows = connection.execute(select(b.c.grain, b.c.bucket, b.c.open_amount, b.c.held_amount)).all()
        assert sorted(tuple(row) for row in rows) == [
            ("day", "2026-01-01", 2000, 0),
            ("hour", "2026-01-01 00", 2000, 0),
            ("minute", "2026-01-01 00:05", 600, 0),
            ("minute", "2026-01-01 00:06", 600, 0),
            ("minute", "2026-01-01 00:07", 600, 0),
            ("minute", "2026-01-01 00:08", 200, 0),
            ("month", "2026-01", 2000, 0),
        ]


def test_the_migration_backfills_an_existing_ledger_like_the_triggers(empty_database_url: str) -> None:
    """A database at 0003 with a ledger already in it gets the buckets the triggers would keep.

    All in one rolled-back transaction (DDL is transactional on both databases), so the made-up
    parents of the rows never meet the foreign keys."""
    engine = create_store_engine(normalise_url(empty_database_url))
    try:
        with engine.connect() as connection:
            transaction = connection.begin()
            command.upgrade(alembic_config(connection), "0003_processor")
            postgresql_database = connection.dialect.name == "postgresql"
            if postgresql_database:  # no deferred foreign-key events, which would block CREATE INDEX
                connection.exec_driver_sql("SET LOCAL session_replication_role = replica")
            world = History(connection)
            world.mixed_ledger(lambda n: BASE + timedelta(hours=7 * n - 150, minutes=n))
            if postgresql_database:
                connection.exec_driver_sql("SET LOCAL session_replication_role = origin")
            command.upgrade(alembic_config(connection), "head")
            assert (
                connection.execute(select(func.count()).select_from(affiliate_balance_buckets)).scalar_one()
                > 0
            )
            for affiliate in AFFILIATES:
                for mode in Mode:
                    for hours in (-200, -3, 0, 1, 40, 300):
                        now = BASE + timedelta(hours=hours, minutes=30)
                        expected = scanned_sums(connection, affiliate, mode, now)
                        assert projected_sums(connection, affiliate, mode, now) == expected
            # From here on the triggers keep it: a dispute closing moves txn_b's entries back.
            world.disputes("txn_b", 0)
            world.check(BASE)
            transaction.rollback()
    finally:
        engine.dispose()


def _buckets(connection: Connection) -> list[tuple[Any, ...]]:
    b = affiliate_balance_buckets
    columns = (b.c.program_affiliate_id, b.c.mode, b.c.grain, b.c.bucket, b.c.open_amount, b.c.held_amount)
    return sorted(tuple(row) for row in connection.execute(select(*columns)).all())


def test_the_minute_migration_backfills_minutes_and_its_downgrade_restores_the_hour_projection(
    empty_database_url: str,
) -> None:
    """Migration 0005 on a ledger kept at 0004: the minute rows it sums in give the balance a full
    scan gives inside any minute, the triggers it replaces keep them from then on, and going back to
    0004 leaves exactly the month, day and hour rows 0004's triggers would have kept."""
    with migrated_to(empty_database_url, "0004_balance_buckets") as connection:
        world = History(connection)
        world.mixed_ledger(lambda n: BASE + timedelta(minutes=7 * n - 200, seconds=n))
        kept_by_0004 = _buckets(connection)
        assert {row[2] for row in kept_by_0004} == {"month", "day", "hour"}

        command.upgrade(alembic_config(connection), "head")
        assert {row[2] for row in _buckets(connection)} == {"month", "day", "hour", "minute"}
        for minutes in (-201, -100, -3, 0, 1, 99, 250):
            for seconds in (0, 30, 59):
                world.check(BASE + timedelta(minutes=minutes, seconds=seconds))
        world.check(17)  # exactly an entry's available_at
        world.disputes("txn_b", 0)  # the new triggers move the minute rows too
        world.entry("pa_one", "txn_c", 555, BASE + timedelta(seconds=30), Mode.LIVE)
        world.check(BASE + timedelta(seconds=30))
        world.check(BASE + timedelta(seconds=29))

        command.downgrade(alembic_config(connection), "0004_balance_buckets")
        world.disputes("txn_b", 2)  # undo the two changes made at head, with 0004's triggers
        world.entry("pa_one", "txn_c", -555, BASE + timedelta(seconds=30), Mode.LIVE)
        restored = [row for row in _buckets(connection) if row[4] or row[5]]
        assert restored == [row for row in kept_by_0004 if row[4] or row[5]]


def test_migration_0018_moves_held_reversals_to_the_open_column_and_its_downgrade_back(
    empty_database_url: str,
) -> None:
    """Before 0018 a disputed payment's reversals were held too, which raised the available
    balance when a dispute opened (probe T). On a ledger kept by 0005's triggers, 0018 moves the
    reversals of the payments held now (not those a payout holds) into the open column, its
    triggers keep them there, and going back to 0017 restores the rows 0017 had kept."""
    with migrated_to(empty_database_url, "0017_event_lists") as connection:
        world = History(connection)
        world.mixed_ledger(lambda n: BASE + timedelta(hours=n - 30, minutes=n))  # txn_b is held
        for n, payment_id in enumerate(("txn_b", "txn_b", "txn_a", "txn_b", "txn_b")):
            world.entry(AFFILIATES[n % 2], payment_id, -(50 + n), BASE + timedelta(hours=n), Mode.LIVE)
        world.item(len(world.entries) - 1, active=True)  # the last reversal is in a payout
        kept_by_0017 = _buckets(connection)
        held_by_0017 = projected_sums(connection, "pa_one", Mode.LIVE, BASE)[EntryStatus.HELD]

        command.upgrade(alembic_config(connection), "head")
        for hours in (-40, -1, 0, 2, 5, 30):
            world.check(BASE + timedelta(hours=hours, minutes=7))
        # pa_one's held reversals of txn_b (-50 and -54, the latter in a payout) : -50 left
        held = projected_sums(connection, "pa_one", Mode.LIVE, BASE)[EntryStatus.HELD]
        assert held == held_by_0017 + 50
        world.disputes("txn_b", 0)  # 0018's triggers move only the positive entries back
        world.disputes("txn_b", 1)
        world.entry("pa_one", "txn_b", -70, BASE + timedelta(minutes=3), Mode.LIVE)  # stays open
        world.check(BASE + timedelta(minutes=5))

        command.downgrade(alembic_config(connection), "0017_event_lists")
        world.disputes("txn_b", 2)  # undo the changes made at head, with 0017's triggers
        world.entry("pa_one", "txn_b", 70, BASE + timedelta(minutes=3), Mode.LIVE)
        restored = [row for row in _buckets(connection) if row[4] or row[5]]
        assert restored == [row for row in kept_by_0017 if row[4] or row[5]]
