"""PostgreSQL: the driver's statements share one cursor per connection (``kept_cursors``).

A new psycopg cursor per statement looked up every parameter dumper and column loader again.
These tests hold one pooled connection, so every unit of work below runs on the same one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from refcore.errors import Conflict
from refcore.models import Organization
from refcore.services.runtime import Runtime


@pytest.fixture
def runtime(one_connection_postgres_runtime: Runtime) -> Runtime:
    return one_connection_postgres_runtime


@pytest.fixture
def cursors_made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every cursor a psycopg connection makes from here on."""
    made: list[Any] = []
    cursor = psycopg.Connection.cursor

    def counting(self: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> Any:
        made.append(found := cursor(self, *args, **kwargs))
        return found

    monkeypatch.setattr(psycopg.Connection, "cursor", counting)
    yield made


def organization(runtime: Runtime, id: str) -> Organization:
    return Organization(id=id, name=f"Org {id}", created_at=runtime.clock.now())


def test_reads_and_writes_of_many_units_of_work_run_on_one_cursor(
    runtime: Runtime, cursors_made: list[Any]
) -> None:
    runtime.read(lambda tx: tx.uow.organizations.find_all({}))  # the connection's first statement
    for n in range(5):
        runtime.transaction(lambda tx, n=n: tx.uow.organizations.add(organization(runtime, f"org_{n}")))
        runtime.read(lambda tx, n=n: tx.uow.organizations.get(f"org_{n}"))
    found = runtime.read(lambda tx: tx.uow.organizations.find_all({}))

    assert [org.id for org in found] == [f"org_{n}" for n in range(5)]
    # One cursor in all; an INSERT sent with the COMMIT goes on a cursor of its own (no more
    # than one per transaction), never one per statement.
    statement_cursors = [c for c in cursors_made if not c.closed]
    assert len(statement_cursors) == 1, cursors_made


def test_after_a_statement_fails_the_next_gets_a_working_cursor(runtime: Runtime) -> None:
    runtime.transaction(lambda tx: tx.uow.organizations.add(organization(runtime, "org_1")))

    def duplicate_then_read(tx: Any) -> None:
        tx.uow.organizations.add(organization(runtime, "org_1"))
        tx.uow.organizations.find_all({})  # sends the deferred INSERT, which fails

    with pytest.raises(Conflict):  # a duplicate key, run again and refused again
        runtime.transaction(duplicate_then_read)

    assert [org.id for org in runtime.read(lambda tx: tx.uow.organizations.find_all({}))] == ["org_1"]
    runtime.transaction(lambda tx: tx.uow.organizations.add(organization(runtime, "org_2")))
    assert len(runtime.read(lambda tx: tx.uow.organizations.find_all({}))) == 2
