"""``Runtime.batch``: a block whose transactions are one write batch of the store. Inside it a
lost race is not retried (the caller runs that work again alone, after the batch), and the
notifier hears of the batch's events only once the batch has ended normally.

The store's batch is a stand-in here (the memory store has none): the SQL stores' own batches
are tested in ``tests/sqlstore/test_write_batches.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, InternalError
from refcore.models import Event, EventType, Organization
from refcore.services.runtime import Runtime, Tx
from refcore_memstore import memory_runtime

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Heard:
    """A notifier that keeps the events it hears, and what ``log`` held at each call."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.events: list[Event] = []
        self.at_calls: list[list[str]] = []

    def events_committed(self, events: Sequence[Event]) -> None:
        self.at_calls.append(list(self.log))
        self.events.extend(events)


@pytest.fixture
def log() -> list[str]:
    return []


@pytest.fixture
def heard(log: list[str]) -> Heard:
    return Heard(log)


@pytest.fixture
def runtime(log: list[str], heard: Heard) -> Runtime:
    """A memory runtime whose store "batch" logs when it starts and ends."""
    rt = memory_runtime(clock=ManualClock(NOW), notifier=heard)

    @contextmanager
    def write_batch() -> Iterator[None]:
        log.append("begin")
        yield
        log.append("commit")

    rt.write_batch = write_batch
    rt.pause = lambda _retry: None
    return rt


def _add_organization(number: int, *, emit: bool = False) -> Callable[[Tx], None]:
    def work(tx: Tx) -> None:
        tx.uow.organizations.add(Organization(id=f"org_{number}", name="Acme", created_at=tx.now))
        if emit:
            tx.emit(EventType.TRANSACTION_CREATED, app_id="app_1", livemode=True, data={"n": number})

    return work


def test_a_lost_race_in_a_batch_is_raised_at_once_not_retried(runtime: Runtime) -> None:
    attempts: list[int] = []

    def loses(tx: Tx) -> None:
        attempts.append(1)
        raise ConcurrentWrite("lost a race")

    with runtime.batch(), pytest.raises(ConcurrentWrite):
        runtime.transaction(loses)
    assert attempts == [1]
    # Outside a batch the same work is retried until the runtime gives up.
    attempts.clear()
    with pytest.raises(Exception, match="collided"):
        runtime.transaction(loses)
    assert len(attempts) > 1


def test_a_batchs_events_are_heard_once_it_has_ended(runtime: Runtime, heard: Heard, log: list[str]) -> None:
    with runtime.batch():
        runtime.transaction(_add_organization(1, emit=True))
        runtime.transaction(_add_organization(2, emit=True))
        assert heard.events == []
    assert [event.data["n"] for event in heard.events] == [1, 2]
    assert heard.at_calls == [["begin", "commit"]]  # one call, after the store's batch ended


def test_a_batch_that_raises_tells_the_notifier_nothing(runtime: Runtime, heard: Heard) -> None:
    with pytest.raises(LookupError), runtime.batch():
        runtime.transaction(_add_organization(1, emit=True))
        raise LookupError("the batch failed")
    assert heard.events == []


def test_a_store_without_write_batches_refuses_a_batch() -> None:
    rt = memory_runtime()
    assert rt.write_batch is None
    with pytest.raises(InternalError), rt.batch():
        pass


def test_batches_do_not_nest(runtime: Runtime, log: list[str]) -> None:
    with runtime.batch(), pytest.raises(InternalError), runtime.batch():
        pass
    assert log == ["begin", "commit"]


def test_another_runtimes_transactions_are_not_part_of_the_batch(runtime: Runtime, heard: Heard) -> None:
    other_heard = Heard([])
    other = memory_runtime(clock=ManualClock(NOW), notifier=other_heard)
    with runtime.batch():
        other.transaction(_add_organization(1, emit=True))
        assert len(other_heard.events) == 1  # heard at its own commit, as outside any batch
    assert heard.events == []
