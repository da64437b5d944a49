"""Integrity the database enforces by itself, whatever code writes to it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from attrs import evolve
from sqlalchemy import UniqueConstraint, text

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, InternalError
from refcore.models import Customer, Mode, User
from refcore.services.runtime import Runtime
from refcore_memstore.database import UNIQUE_KEYS
from refcore_sqlstore import SqlStore
from refcore_sqlstore.tables import metadata
from tests.contract.scenario import build_world
from tests.sqlstore.raw import count, engine_of

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _unique_keys_of_the_schema() -> dict[str, set[tuple[str, ...]]]:
    keys: dict[str, set[tuple[str, ...]]] = {}
    for table in metadata.tables.values():
        for constraint in table.constraints:
            if isinstance(constraint, UniqueConstraint):
                keys.setdefault(table.name, set()).add(tuple(c.name for c in constraint.columns))
    return keys


def test_the_schema_has_exactly_the_unique_keys_of_the_memory_store() -> None:
    """Both stores must refuse the same duplicates, or the contract suite would prove nothing."""
    expected = {name: set(keys) for name, keys in UNIQUE_KEYS.items()}
    assert _unique_keys_of_the_schema() == expected


def _paid_world(store: SqlStore) -> tuple[Runtime, str]:
    rt = store.runtime(clock=ManualClock())
    world = build_world(rt, ManualClock())
    payment = world.pay(world.referred_customer(), 10_000).record
    return rt, payment.id


@pytest.mark.parametrize(
    "statement", ["UPDATE commission_entries SET amount = 0", "DELETE FROM commission_entries"]
)
def test_the_database_refuses_to_change_a_ledger_row(sql_store: SqlStore, statement: str) -> None:
    _rt, payment_id = _paid_world(sql_store)
    assert count(sql_store, "commission_entries", transaction_id=payment_id) == 1
    with pytest.raises(Exception, match="append-only"), engine_of(sql_store).begin() as connection:
        connection.execute(text(statement))
    assert count(sql_store, "commission_entries", transaction_id=payment_id, amount=2_000) == 1


def test_the_ledger_repository_refuses_replace(sql_store: SqlStore) -> None:
    rt, payment_id = _paid_world(sql_store)

    def rewrite(tx: object) -> None:
        entries = tx.uow.commission_entries.find_all({"transaction_id": payment_id})  # type: ignore[attr-defined]
        tx.uow.commission_entries.replace(evolve(entries[0], amount=1))  # type: ignore[attr-defined]

    with pytest.raises(TypeError, match="append-only"):
        rt.transaction(rewrite)
    assert count(sql_store, "commission_entries", transaction_id=payment_id, amount=2_000) == 1


def test_a_taken_unique_key_is_a_concurrent_write(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.users.add(User(id="usr_1", email="dev@example.com", created_at=NOW))
        uow.commit()
    # At the add, or at the commit that carries it (PostgreSQL defers inserts: the port allows both).
    with sql_store.unit_of_work() as uow, pytest.raises(ConcurrentWrite):
        uow.users.add(User(id="usr_2", email="dev@example.com", created_at=NOW))
        uow.commit()
    with sql_store.unit_of_work() as uow, pytest.raises(ConcurrentWrite):
        uow.users.add(User(id="usr_1", email="other@example.com", created_at=NOW))
        uow.commit()
    assert count(sql_store, "users") == 1


def test_customers_without_external_id_never_clash(sql_store: SqlStore) -> None:
    rt = sql_store.runtime(clock=ManualClock())
    world = build_world(rt, ManualClock())
    for number in range(2):
        customer = Customer(
            id=f"rcus_{number}", app_id=world.app.id, mode=Mode.LIVE, created_at=NOW, email="x@example.com"
        )
        rt.transaction(lambda tx, c=customer: tx.uow.customers.add(c))
    assert count(sql_store, "customers", email="x@example.com") == 2


def test_the_database_refuses_consumption_beyond_the_payment(sql_store: SqlStore) -> None:
    """Refunds plus open or lost disputes never exceed the payment, even if code tried."""
    rt, payment_id = _paid_world(sql_store)

    def over_refund(tx: object) -> None:
        payment = tx.uow.payments.get(payment_id)  # type: ignore[attr-defined]
        tx.uow.payments.replace(evolve(payment, refunded_amount=payment.amount + 1))  # type: ignore[attr-defined]

    with pytest.raises(InternalError):
        rt.transaction(over_refund)
    assert count(sql_store, "payments", id=payment_id, refunded_amount=0) == 1


def test_a_dangling_reference_is_refused_at_commit_and_nothing_is_stored(sql_store: SqlStore) -> None:
    customer = Customer(id="rcus_1", app_id="app_missing", mode=Mode.LIVE, created_at=NOW)
    with sql_store.unit_of_work() as uow:
        uow.customers.add(customer)
        with pytest.raises(InternalError):
            uow.commit()
    assert count(sql_store, "customers") == 0
