"""Runtime rules a library caller meets on every store: no transaction inside another's work,
and a notifier that fails after a commit does not turn the committed write into an error."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.errors import InternalError
from refcore.models import Event, EventType, Organization
from refcore.services.runtime import Runtime, Tx
from tests.contract.organization_work import add_organization
from tests.contract.scenario import build_world


def _names(runtime: Runtime) -> list[str]:
    return sorted(o.name for o in runtime.read(lambda tx: tx.uow.organizations.find_all({})))


def test_a_transaction_inside_another_transactions_work_is_refused(runtime: Runtime) -> None:
    """It would commit on its own: on PostgreSQL and the memory store it had been kept though
    the outer one failed; SQLite had refused it with a message about its writer."""

    def outer(tx: Tx) -> None:
        add_organization("outer")(tx)
        runtime.transaction(add_organization("inner"))

    with pytest.raises(InternalError, match="inside another transaction"):
        runtime.transaction(outer)
    assert _names(runtime) == []
    runtime.transaction(add_organization("after"))  # the next one runs as usual
    assert _names(runtime) == ["after"]


def test_a_transaction_inside_a_reads_work_is_refused(runtime: Runtime) -> None:
    """Probe R: a service called from a read callback committed on its own, and its write
    stayed when the callback then raised."""

    def read_and_write(tx: Tx) -> None:
        tx.uow.organizations.find_all({})
        runtime.transaction(add_organization("inside a read"))
        raise AssertionError("not reached")

    with pytest.raises(InternalError, match="inside another transaction's \\(or a read's\\) work"):
        runtime.read(read_and_write)
    assert _names(runtime) == []
    assert runtime.read(lambda tx: len(tx.uow.organizations.find_all({}))) == 0  # reads still nest


class _Failing:
    def events_committed(self, events: Sequence[Event]) -> None:
        raise RuntimeError("the notifier is down")


def test_a_notifier_that_fails_after_a_commit_does_not_fail_the_write(
    runtime: Runtime, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The write is committed: raising had told the caller it failed, and retrying a write that
    is no replay (a mark-paid) was then refused. The events stay in the outbox."""
    world = build_world(runtime, clock)
    failing = evolve(runtime, notifier=_Failing())
    before = len(runtime.read(lambda tx: tx.uow.events.find_all({})))

    def work(tx: Tx) -> Organization:
        tx.emit(EventType.AFFILIATE_CREATED, app_id=world.app.id, livemode=True, data={"id": "aff_1"})
        return add_organization("noted")(tx)

    with caplog.at_level("ERROR", logger="refcore.runtime"):
        assert failing.transaction(work).name == "noted"
    assert "noted" in _names(runtime)
    assert "notifier failed" in caplog.text
    assert len(runtime.read(lambda tx: tx.uow.events.find_all({}))) == before + 1
