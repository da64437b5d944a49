"""``Runtime.read`` runs a read again when the store says it raced (``ConcurrentWrite``), up to
eight runs, if the read's own unit of work ended with the failure, so that each run gets a new one.

A read races no one; the case is PostgreSQL's statement prepared before a migration changed a
column's type, whose connection the unit of work discards (``tests/sqlstore/test_stale_plans.py``
has the real thing). Here the work itself raises, on the memory store.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite
from refcore.ports import UnitOfWork
from refcore.services.runtime import Runtime, Tx
from refcore_memstore import memory_runtime

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def runtime() -> Runtime:
    return memory_runtime(clock=ManualClock(NOW))


class FailsFirst:
    """Work that raises ``ConcurrentWrite`` on its first ``failures`` runs; records the unit of
    work each run got."""

    def __init__(self, failures: int = 1) -> None:
        self.failures = failures
        self.units: list[UnitOfWork] = []

    def __call__(self, tx: Tx) -> str:
        self.units.append(tx.uow)
        if len(self.units) <= self.failures:
            raise ConcurrentWrite("stale")
        return "read"


def test_a_read_that_raced_runs_again_once(runtime: Runtime) -> None:
    work = FailsFirst()

    assert runtime.read(work) == "read"
    assert len(work.units) == 2


def test_a_read_that_raced_seven_times_succeeds_on_its_eighth_run(runtime: Runtime) -> None:
    """Each run may meet another stale connection (probe K saw a second run fail)."""
    work = FailsFirst(failures=7)

    assert runtime.read(work) == "read"
    assert len(work.units) == 8


def test_a_read_that_keeps_racing_fails_after_eight_runs(runtime: Runtime) -> None:
    work = FailsFirst(failures=8)

    with pytest.raises(ConcurrentWrite):
        runtime.read(work)
    assert len(work.units) == 8


def test_the_first_read_of_a_shared_block_runs_again_in_a_new_unit_of_work(runtime: Runtime) -> None:
    work = FailsFirst()
    with runtime.shared_read():
        assert runtime.read(work) == "read"
        after: list[UnitOfWork] = []
        runtime.read(lambda tx: after.append(tx.uow))

    assert len(work.units) == 2
    assert work.units[0] is not work.units[1]
    assert after == [work.units[1]], "the block shares the new unit of work"


def test_a_read_inside_another_read_fails_and_the_outer_one_runs_again(runtime: Runtime) -> None:
    inner = FailsFirst()
    outer_runs = 0

    def outer(tx: Tx) -> str:
        nonlocal outer_runs
        outer_runs += 1
        return runtime.read(inner)

    with runtime.shared_read():
        assert runtime.read(outer) == "read"

    assert outer_runs == 2
    assert len(inner.units) == 2, "the inner read ran once in each of the outer's runs"


def test_a_read_that_raced_inside_a_read_then_write_block_runs_again_outside_it(
    runtime: Runtime,
) -> None:
    """The block's unit of work ended with the failure: the block shares nothing more."""
    work = FailsFirst()
    with runtime.read_then_write():
        assert runtime.read(work) == "read"
    assert len(work.units) == 2


def test_other_errors_are_not_run_again(runtime: Runtime) -> None:
    runs = 0

    def work(tx: Tx) -> None:
        nonlocal runs
        runs += 1
        raise ValueError("not a race")

    with pytest.raises(ValueError, match="not a race"):
        runtime.read(work)
    assert runs == 1
