"""The payout sums projection (``affiliate_payout_sums``, migration 0009) against a sum of the payouts.

A balance's ``paid`` and ``processing`` come from one row per affiliate that triggers on
``payout_executions`` keep. These tests show that after any history of payouts inserted, moved
between statuses, changed and deleted, each row equals the sum over the executions themselves
(the query the balance ran before, kept here as the oracle); that the migration's backfill of
existing payouts gives the same rows; and that a batch's dispatch (``prepared`` to ``ready``)
writes no row, so it takes no lock the ledger's writers could meet.

Each example runs in one transaction that is rolled back: the foreign keys, checked only at
commit, never see the made-up parents.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, case, delete, func, insert, select, update

from refcore.models import EntryStatus, Mode
from refcore.models.payout import PayoutExecutionStatus
from refcore_sqlstore import SqlStore
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.ledger import SqlLedgerReads
from refcore_sqlstore.migrate import alembic_config
from refcore_sqlstore.tables import affiliate_payout_sums, payout_executions
from tests.sqlstore.raw import engine_of, rolled_back

EXAMPLES = max(30, settings.default.max_examples // 5)
AT = datetime(2026, 1, 1, tzinfo=UTC)
AFFILIATES = ("pa_one", "pa_two")
STATUSES = tuple(PayoutExecutionStatus)


def scanned_sums(connection: Connection) -> dict[str, tuple[int, int]]:
    """The oracle: per affiliate, the sums of its succeeded and of its prepared or ready payouts."""
    x = payout_executions
    status = x.c.status

    def total(condition: Any) -> Any:
        return func.coalesce(func.sum(case((condition, x.c.amount), else_=0)), 0)

    rows = connection.execute(
        select(
            x.c.program_affiliate_id,
            total(status == PayoutExecutionStatus.SUCCEEDED.value),
            total(status.in_([PayoutExecutionStatus.PREPARED.value, PayoutExecutionStatus.READY.value])),
        ).group_by(x.c.program_affiliate_id)
    ).all()
    return {affiliate: (int(paid), int(live)) for affiliate, paid, live in rows if paid or live}


def projected_sums(connection: Connection) -> dict[str, tuple[int, int]]:
    """The projection's rows, leaving out those that came back to zero."""
    s = affiliate_payout_sums
    rows = connection.execute(select(s.c.program_affiliate_id, s.c.paid_amount, s.c.processing_amount)).all()
    return {affiliate: (int(paid), int(live)) for affiliate, paid, live in rows if paid or live}


def execution_row(
    execution_id: str, affiliate: str, amount: int, status: PayoutExecutionStatus
) -> dict[str, Any]:
    return {
        "id": execution_id,
        "app_id": "app_x",
        "program_id": "prog_x",
        "program_affiliate_id": affiliate,
        "amount": amount,
        "currency": "usd",
        "status": status.value,
        "created_at": AT,
        "batch_id": None,
        "completed_at": None,
        "idempotency_key": None,
        "completed_manually": False,
        "outcome_reason": None,
        "live_program_affiliate_id": None,
    }


amounts = st.integers(min_value=1, max_value=2**40)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(AFFILIATES), amounts, st.sampled_from(STATUSES)),
        st.tuples(st.just("move"), st.integers(min_value=0, max_value=20), st.sampled_from(STATUSES)),
        st.tuples(st.just("change_amount"), st.integers(min_value=0, max_value=20), amounts),
        st.tuples(st.just("reassign"), st.integers(min_value=0, max_value=20), st.sampled_from(AFFILIATES)),
        st.tuples(st.just("drop"), st.integers(min_value=0, max_value=20)),
    ),
    max_size=30,
)


class Payouts:
    """Applies one generated history of payout executions, tracking the IDs it made."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.ids: list[str] = []
        self.made = 0

    def add(self, affiliate: str, amount: int, status: PayoutExecutionStatus) -> None:
        execution_id = f"pex_{self.made}"
        self.made += 1
        self.connection.execute(
            insert(payout_executions).values(execution_row(execution_id, affiliate, amount, status))
        )
        self.ids.append(execution_id)

    def _set(self, index: int, **values: Any) -> None:
        if self.ids:
            execution_id = self.ids[index % len(self.ids)]
            self.connection.execute(
                update(payout_executions).where(payout_executions.c.id == execution_id).values(**values)
            )

    def move(self, index: int, status: PayoutExecutionStatus) -> None:
        self._set(index, status=status.value)

    def change_amount(self, index: int, amount: int) -> None:
        self._set(index, amount=amount)

    def reassign(self, index: int, affiliate: str) -> None:
        self._set(index, program_affiliate_id=affiliate)

    def drop(self, index: int) -> None:
        if self.ids:
            execution_id = self.ids.pop(index % len(self.ids))
            self.connection.execute(delete(payout_executions).where(payout_executions.c.id == execution_id))


@pytest.fixture
def connection(sql_store: SqlStore) -> Iterator[Connection]:
    with engine_of(sql_store).connect() as connection:
        yield connection


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=steps)
def test_the_projected_payout_sums_equal_a_sum_of_the_payouts_after_any_history(
    connection: Connection, history: list[tuple[Any, ...]]
) -> None:
    """Decisions 5: ``paid`` is what succeeded payouts hold, ``processing`` what live ones hold."""
    with rolled_back(connection):
        payouts = Payouts(connection)
        for name, *arguments in history:
            getattr(payouts, name)(*arguments)
            assert projected_sums(connection) == scanned_sums(connection), (name, arguments)


def test_the_balance_reads_paid_and_processing_from_the_projection(connection: Connection) -> None:
    """The balance's two payout statuses are the projection's row, and 0 before any payout."""
    with rolled_back(connection):
        reads = SqlLedgerReads(connection)
        before = reads.status_sums("pa_one", Mode.LIVE, AT)
        assert (before[EntryStatus.PAID], before[EntryStatus.PROCESSING]) == (0, 0)
        payouts = Payouts(connection)
        payouts.add("pa_one", 700, PayoutExecutionStatus.SUCCEEDED)
        payouts.add("pa_one", 50, PayoutExecutionStatus.READY)
        payouts.add("pa_two", 9, PayoutExecutionStatus.SUCCEEDED)
        # Were the sum still read from the executions, this change behind the triggers' back
        # would show: the balance must read the projection's row instead.
        connection.execute(
            update(affiliate_payout_sums).values(paid_amount=affiliate_payout_sums.c.paid_amount + 1)
        )
        after = reads.status_sums("pa_one", Mode.LIVE, AT)
        assert (after[EntryStatus.PAID], after[EntryStatus.PROCESSING]) == (701, 50)
        test_mode = reads.status_sums("pa_one", Mode.TEST, AT)
        assert (test_mode[EntryStatus.PAID], test_mode[EntryStatus.PROCESSING]) == (0, 0)


def test_a_batch_dispatch_writes_no_payout_sums_row(connection: Connection) -> None:
    """``prepared`` to ``ready`` leaves ``processing`` as it was, so its trigger does not fire:
    dispatching a batch of many affiliates takes none of their rows (PostgreSQL: the row
    version, ``xmin``, stays the same; SQLite: no change is counted)."""
    with rolled_back(connection):
        payouts = Payouts(connection)
        payouts.add("pa_one", 500, PayoutExecutionStatus.PREPARED)
        postgresql_database = connection.dialect.name == "postgresql"

        def version() -> Any:
            if postgresql_database:
                return connection.exec_driver_sql("SELECT xmin::text FROM affiliate_payout_sums").scalar_one()
            return connection.exec_driver_sql("SELECT total_changes()").scalar_one()

        if postgresql_database:  # a new transaction ID for the next write, to tell it apart
            connection.exec_driver_sql("SAVEPOINT dispatch")
        seen = version()
        payouts.move(0, PayoutExecutionStatus.READY)
        changes = 1  # the execution's own row (SQLite counts trigger writes as well)
        assert version() == (seen if postgresql_database else seen + changes)
        assert projected_sums(connection) == {"pa_one": (0, 500)}
        payouts.move(0, PayoutExecutionStatus.SUCCEEDED)
        assert version() != seen
        assert projected_sums(connection) == {"pa_one": (500, 0)}


def test_the_migration_backfills_existing_payouts_and_its_downgrade_drops_the_projection(
    empty_database_url: str,
) -> None:
    """A database at 0008 with payouts of every status gets the rows its triggers would keep, the
    triggers keep them from then on, and going back to 0008 leaves no table behind."""
    engine = create_store_engine(normalise_url(empty_database_url))
    try:
        with engine.connect() as connection:
            transaction = connection.begin()
            command.upgrade(alembic_config(connection), "0008_customer_emails")
            payouts = Payouts(connection)
            for n in range(24):
                payouts.add(AFFILIATES[n % 2], 100 + n, STATUSES[n % len(STATUSES)])
            payouts.add("pa_three", 5, PayoutExecutionStatus.FAILED)

            command.upgrade(alembic_config(connection), "head")
            expected = scanned_sums(connection)
            assert set(expected) == set(AFFILIATES)
            assert projected_sums(connection) == expected
            payouts.move(1, PayoutExecutionStatus.FAILED)
            payouts.add("pa_three", 40, PayoutExecutionStatus.PREPARED)
            assert projected_sums(connection) == scanned_sums(connection)

            command.downgrade(alembic_config(connection), "0008_customer_emails")
            tables = connection.dialect.get_table_names(connection)
            assert "affiliate_payout_sums" not in tables
            payouts.add("pa_one", 1, PayoutExecutionStatus.SUCCEEDED)  # no trigger left to fail
            transaction.rollback()
    finally:
        engine.dispose()
