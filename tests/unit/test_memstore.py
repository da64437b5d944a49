"""The in-memory store behaves like a database transaction (issue 2): nothing is visible until
commit, a failed unit of work leaves nothing behind, unique keys clash like constraints, and the
ledger is append-only."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, RefcoreError, ValidationError
from refcore.models import CommissionEntry, EntryKind, Event, EventType, Mode, Organization, User
from refcore.services.runtime import Runtime, Tx, pause_before_retry
from refcore_memstore import MemoryDatabase, MemoryOutbox, MemoryUnitOfWork, memory_runtime

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def org(id: str, name: str = "Acme") -> Organization:
    return Organization(id=id, name=name, created_at=NOW)


def entry(id: str) -> CommissionEntry:
    return CommissionEntry(
        id=id,
        app_id="app_1",
        mode=Mode.LIVE,
        program_id="prg_1",
        program_affiliate_id="aff_1",
        transaction_id="txn_1",
        source_id="txn_1",
        kind=EntryKind.EARNED,
        amount=100,
        currency="usd",
        available_at=NOW,
        created_at=NOW,
    )


def test_memstore_commit_makes_writes_visible_to_later_units_of_work() -> None:
    db = MemoryDatabase()
    with MemoryUnitOfWork(db) as uow:
        uow.organizations.add(org("org_1"))
        assert uow.organizations.get("org_1") == org("org_1")  # a unit of work sees its own writes
        uow.commit()
    with MemoryUnitOfWork(db) as uow:
        assert uow.organizations.get("org_1") == org("org_1")


def test_memstore_leaving_without_commit_discards_every_write() -> None:
    db = MemoryDatabase()
    with MemoryUnitOfWork(db) as uow:
        uow.organizations.add(org("org_1"))
        uow.commit()
    with MemoryUnitOfWork(db) as uow:
        uow.organizations.add(org("org_2"))
        uow.organizations.replace(org("org_1", "Renamed"))
    with MemoryUnitOfWork(db) as uow:
        assert uow.organizations.find_all({}) == [org("org_1")]


def test_memstore_a_unit_of_work_kept_after_its_block_cannot_commit() -> None:
    """It no longer holds the database lock: its commit had landed anyway, unserialised."""
    db = MemoryDatabase()
    with MemoryUnitOfWork(db) as kept:
        pass
    kept.organizations.add(org("org_late"))
    with pytest.raises(RefcoreError) as refused:
        kept.commit()
    assert refused.value.code == "internal_error"
    with MemoryUnitOfWork(db) as uow:
        assert uow.organizations.find_all({}) == []


def test_memstore_an_exception_rolls_back_the_whole_transaction() -> None:
    rt = memory_runtime(clock=ManualClock())

    def work(tx: Tx) -> None:
        tx.uow.organizations.add(org("org_1"))
        tx.emit(EventType.AFFILIATE_CREATED, app_id="app_1", livemode=True, data={"id": "aff_1"})
        raise ValidationError("refused", param="x")

    with pytest.raises(ValidationError):
        rt.transaction(work)
    assert rt.read(lambda tx: (tx.uow.organizations.find_all({}), tx.uow.events.find_all({}))) == ([], [])


def test_memstore_a_second_unit_of_work_waits_and_then_sees_the_commit() -> None:
    db = MemoryDatabase()
    seen: list[Organization | None] = []
    first = MemoryUnitOfWork(db).__enter__()
    first.organizations.add(org("org_1"))

    def second() -> None:
        with MemoryUnitOfWork(db) as uow:
            seen.append(uow.organizations.get("org_1"))

    thread = threading.Thread(target=second)
    thread.start()
    assert seen == []  # cannot have read: the first unit of work still holds the store
    first.commit()
    first.__exit__(None, None, None)
    thread.join()
    assert seen == [org("org_1")]


def test_memstore_unique_keys_clash_like_constraints_and_null_never_clashes() -> None:
    db = MemoryDatabase()
    with MemoryUnitOfWork(db) as uow:
        uow.users.add(User(id="usr_1", email="a@example.com", created_at=NOW))
        uow.commit()
    with MemoryUnitOfWork(db) as uow, pytest.raises(ConcurrentWrite):
        uow.users.add(User(id="usr_2", email="a@example.com", created_at=NOW))
    with MemoryUnitOfWork(db) as uow:
        uow.users.add(User(id="usr_2", email="b@example.com", created_at=NOW))
        with pytest.raises(ConcurrentWrite):  # against a staged row too
            uow.users.add(User(id="usr_3", email="b@example.com", created_at=NOW))
        with pytest.raises(ConcurrentWrite):  # the same ID twice
            uow.users.add(User(id="usr_1", email="c@example.com", created_at=NOW))


def test_memstore_commission_entries_are_append_only() -> None:
    db = MemoryDatabase()
    with MemoryUnitOfWork(db) as uow:
        uow.commission_entries.add(entry("com_1"))
        uow.commit()
    with MemoryUnitOfWork(db) as uow, pytest.raises(TypeError):
        uow.commission_entries.replace(entry("com_1"))


def test_memstore_find_all_is_oldest_first_and_page_newest_first() -> None:
    db = MemoryDatabase()
    with MemoryUnitOfWork(db) as uow:
        for id in ("org_3", "org_1", "org_2", "org_4"):
            uow.organizations.add(org(id, "same"))
        uow.commit()
    with MemoryUnitOfWork(db) as uow:
        assert [o.id for o in uow.organizations.find_all({"name": "same"})] == [
            "org_1",
            "org_2",
            "org_3",
            "org_4",
        ]
        assert [o.id for o in uow.organizations.page({}, limit=2, before=None)] == ["org_4", "org_3"]
        assert [o.id for o in uow.organizations.page({}, limit=5, before="org_3")] == ["org_2", "org_1"]
        assert uow.organizations.find_one({"name": "other"}) is None


class Recording:
    def __init__(self) -> None:
        self.batches: list[Sequence[Event]] = []

    def events_committed(self, events: Sequence[Event]) -> None:
        self.batches.append(events)


def test_runtime_tells_the_notifier_only_after_a_commit() -> None:
    notifier = Recording()
    rt = memory_runtime(clock=ManualClock(), notifier=notifier)

    def emit(fail: bool) -> None:
        def work(tx: Tx) -> None:
            tx.emit(EventType.AFFILIATE_CREATED, app_id="app_1", livemode=True, data={"id": "aff_1"})
            if fail:
                raise ValidationError("refused")

        rt.transaction(work)

    with pytest.raises(ValidationError):
        emit(fail=True)
    assert notifier.batches == []
    emit(fail=False)
    assert [[e.data["id"] for e in batch] for batch in notifier.batches] == [["aff_1"]]


def test_runtime_runs_the_work_again_after_a_lost_race_then_gives_up() -> None:
    rt: Runtime = memory_runtime(clock=ManualClock())
    attempts: list[int] = []

    def flaky(tx: Tx) -> str:
        attempts.append(1)
        tx.uow.organizations.add(org(f"org_{len(attempts)}"))
        if len(attempts) < 3:
            raise ConcurrentWrite("lost a race")
        return "done"

    assert rt.transaction(flaky) == "done"
    assert [o.id for o in rt.read(lambda tx: tx.uow.organizations.find_all({}))] == ["org_3"]

    def always(tx: Tx) -> None:
        raise ConcurrentWrite("lost a race")

    with pytest.raises(RefcoreError) as caught:
        rt.transaction(always)
    assert caught.value.code == "state_conflict"


def test_runtime_pauses_a_random_and_growing_moment_before_each_retry() -> None:
    """Collided transactions retried at once tend to collide again: each retry waits first."""
    pauses: list[int] = []
    rt: Runtime = evolve(memory_runtime(clock=ManualClock()), pause=pauses.append)

    def always(tx: Tx) -> None:
        raise ConcurrentWrite("lost a race")

    with pytest.raises(RefcoreError):
        rt.transaction(always)
    assert pauses == list(range(7))  # eight attempts, a pause before each of the seven retries
    assert rt.transaction(lambda tx: "first time") == "first time"
    assert len(pauses) == 7  # no pause without a lost race


def test_the_pause_before_a_retry_is_random_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("refcore.services.runtime.time.sleep", slept.append)
    for retry in range(7):
        for _ in range(50):
            pause_before_retry(retry)
    for retry in range(7):
        chunk = slept[retry * 50 : (retry + 1) * 50]
        assert all(0 <= s <= 0.001 * 2**retry for s in chunk)
        assert len(set(chunk)) > 1
    assert max(slept[6 * 50 :]) > 0.001 * 2**5  # the bound really doubles


@pytest.mark.parametrize("limit", [0, -1])
def test_memstore_an_outbox_claim_limit_below_one_is_refused_and_claims_nothing(limit: int) -> None:
    """A slice ``[:-1]`` had claimed every event but the last (the SQL outbox has the same test)."""
    database = MemoryDatabase()
    rt = memory_runtime(clock=ManualClock(NOW), database=database)

    def emit(tx: Tx) -> Event:
        return tx.emit(EventType.WEBHOOK_TEST, app_id="app_1", livemode=False, data={"id": "t"})

    emitted = [rt.transaction(emit).id for _ in range(3)]
    outbox = MemoryOutbox(database)
    with pytest.raises(ValueError, match="at least 1"):
        outbox.claim(now=NOW, limit=limit, lease_seconds=60)
    assert [e.id for e in outbox.claim(now=NOW, limit=100, lease_seconds=60)] == emitted
