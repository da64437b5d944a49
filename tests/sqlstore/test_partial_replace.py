"""``replace`` of a record the unit of work read sets only the columns that changed; the stored
record is the same as with a full replace, and anything doubtful is written."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.models import Event, EventType
from refcore_sqlstore import SqlStore
from tests.contract.scenario import build_world
from tests.sqlstore import raw

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _event(data: dict[str, Any]) -> Event:
    return Event(
        id="whev_1", app_id=APP["id"], type=EventType.WEBHOOK_TEST, livemode=True, created_at=NOW, data=data
    )


APP = {"id": ""}


@pytest.fixture(autouse=True)
def _app(sql_store: SqlStore) -> None:
    """An App for the events to belong to (its foreign key)."""
    APP["id"] = build_world(sql_store.runtime(), ManualClock()).app.id


def _is_update(statement: str) -> bool:
    return statement.lstrip().upper().startswith("UPDATE")


@contextmanager
def updates(store: SqlStore) -> Iterator[list[str]]:
    """The UPDATE statements sent inside the block, whitespace normalised, once it has ended."""
    seen: list[str] = []
    with raw.recorded_statements(store, keep=_is_update) as statements:
        yield seen
    seen.extend(" ".join(statement.split()) for statement, _parameters in statements)


def _stored(store: SqlStore) -> Event | None:
    with store.read_unit_of_work() as uow:
        return uow.events.get("whev_1")


def test_a_record_read_in_the_unit_of_work_gets_only_its_changed_columns(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.events.add(_event({"id": "x", "amount": 1, "tags": ["a"]}))
        uow.commit()
    with updates(sql_store) as seen, sql_store.unit_of_work() as uow:
        stored = uow.events.get("whev_1", for_update=True)
        assert stored is not None
        uow.events.replace(evolve(stored, delivered_at=NOW))
        uow.commit()
    assert len(seen) == 1
    assert "SET delivered_at=" in seen[0].replace(" = ", "=")
    assert "data" not in seen[0].split("WHERE")[0]
    assert _stored(sql_store) == evolve(_event({"id": "x", "amount": 1, "tags": ["a"]}), delivered_at=NOW)


def test_a_second_replace_compares_with_the_first_one(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.events.add(_event({"id": "x"}))
        uow.commit()
    with sql_store.unit_of_work() as uow:
        stored = uow.events.get("whev_1")
        assert stored is not None
        uow.events.replace(evolve(stored, claimed_at=NOW))
        # Back to the value read: must be written, since the row now holds NOW.
        uow.events.replace(stored)
        uow.commit()
    assert _stored(sql_store) == _event({"id": "x"})


def test_json_values_that_are_equal_but_not_the_same_are_written(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.events.add(_event({"id": "x", "flag": 1}))
        uow.commit()
    with updates(sql_store) as seen, sql_store.unit_of_work() as uow:
        stored = uow.events.get("whev_1")
        assert stored is not None
        uow.events.replace(evolve(stored, data={"id": "x", "flag": True}))
        uow.commit()
    assert "data" in seen[0].split("WHERE")[0]
    stored = _stored(sql_store)
    assert stored is not None and stored.data["flag"] is True


def test_a_record_not_read_here_is_written_whole(sql_store: SqlStore) -> None:
    with sql_store.unit_of_work() as uow:
        uow.events.add(_event({"id": "x"}))
        uow.commit()
    with updates(sql_store) as seen, sql_store.unit_of_work() as uow:
        uow.events.replace(evolve(_event({"id": "y"}), delivered_at=NOW))
        uow.commit()
    assert "data" in seen[0].split("WHERE")[0]
    assert _stored(sql_store) == evolve(_event({"id": "y"}), delivered_at=NOW)


def test_repositories_are_not_used_after_their_unit_of_work(sql_store: SqlStore) -> None:
    uow = sql_store.unit_of_work()
    with uow:
        uow.events.add(_event({"id": "x"}))
        uow.commit()
    try:
        uow.events.get("whev_1")
    except RuntimeError:
        pass
    else:
        raise AssertionError("a closed unit of work answered a read")
