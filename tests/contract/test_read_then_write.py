"""``Runtime.read_then_write``: the reads of a block and its first transaction share the unit of
work that transaction commits, where the store allows it (every store is tested with it allowed).

A keyed write reads its credential and then writes; on PostgreSQL sharing the unit of work saves
the credential's own connection checkout and round trip. Nothing a caller sees may change: what
is committed, what a failure leaves behind, and what a retried transaction does.
"""

from __future__ import annotations

import pytest
from attrs import evolve

from refcore.errors import ConcurrentWrite, InternalError, NotFound
from refcore.models import Organization
from refcore.services.runtime import Runtime, Tx
from tests.contract.organization_work import add_organization, find_organization, missing_organization
from tests.unit_of_work_log import counted


def _joining(runtime: Runtime) -> tuple[Runtime, list[str], list[str]]:
    return counted(evolve(runtime, reads_join_writes=True))


def _joining_with_one(runtime: Runtime, name: str) -> tuple[Runtime, list[str], list[str], Organization]:
    """:func:`_joining`, with one organization already stored and its write left uncounted."""
    rt, reads, writes = _joining(runtime)
    existing = rt.transaction(add_organization(name))
    writes.clear()
    return rt, reads, writes, existing


def test_read_then_write_is_allowed_on_postgresql_alone(
    runtime: Runtime, request: pytest.FixtureRequest
) -> None:
    """SQLite's writers queue for one lock and the memory store's for one mutex: a read there
    must not take the write's turn before it knows there is a write."""
    assert runtime.reads_join_writes == (request.node.callspec.params["runtime"] == "postgres")


def test_read_then_write_the_reads_and_the_first_transaction_share_one_committed_unit_of_work(
    runtime: Runtime,
) -> None:
    rt, reads, writes, existing = _joining_with_one(runtime, "Existing")

    with rt.read_then_write():
        assert writes == []  # nothing is opened before a read needs it
        assert rt.read(find_organization(existing.id)) == existing
        assert rt.read(find_organization("org_missing")) is None
        added = rt.transaction(add_organization("Added"))
        assert writes == ["open", "end"]
    assert reads == []
    assert writes == ["open", "end"]
    assert rt.read(find_organization(added.id)) == added  # committed


def test_read_then_write_a_block_without_a_transaction_ends_its_unit_of_work_uncommitted(
    runtime: Runtime,
) -> None:
    rt, _, writes, existing = _joining_with_one(runtime, "Read only")
    with pytest.raises(NotFound), rt.read_then_write():
        assert rt.read(find_organization(existing.id)) == existing
        raise NotFound.of("organization", "org_refused")  # the handler refused the request
    assert writes == ["open", "end"]


def test_read_then_write_a_failed_read_ends_the_unit_of_work_and_what_follows_has_its_own(
    runtime: Runtime,
) -> None:
    rt, reads, writes, existing = _joining_with_one(runtime, "Before")
    with rt.read_then_write():
        with pytest.raises(NotFound):
            rt.read(missing_organization)
        assert writes == ["open", "end"]
        assert rt.read(find_organization(existing.id)) == existing
        added = rt.transaction(add_organization("After"))
    assert reads == ["open", "end"]
    assert writes == ["open", "end"] * 2
    assert rt.read(find_organization(added.id)) == added


def test_read_then_write_a_failed_transaction_commits_nothing_and_the_next_has_its_own(
    runtime: Runtime,
) -> None:
    rt, _, writes = _joining(runtime)
    kept: list[Organization] = []

    def add_then_fail(tx: Tx) -> None:
        kept.append(add_organization("Rolled back")(tx))
        raise NotFound.of("organization", "org_missing")

    writes.clear()
    with rt.read_then_write():
        rt.read(find_organization("org_missing"))
        with pytest.raises(NotFound):
            rt.transaction(add_then_fail)
        added = rt.transaction(add_organization("Second"))
    assert writes == ["open", "end"] * 2
    assert rt.read(find_organization(kept[0].id)) is None
    assert rt.read(find_organization(added.id)) == added


def test_read_then_write_a_transaction_that_lost_a_race_runs_again_in_a_unit_of_work_of_its_own(
    runtime: Runtime,
) -> None:
    rt, _, writes = _joining(runtime)
    rt = evolve(rt, pause=lambda retry: None)
    attempts: list[Organization] = []

    def add_losing_once(tx: Tx) -> Organization:
        organization = add_organization(f"Attempt {len(attempts)}")(tx)
        attempts.append(organization)
        if len(attempts) == 1:
            raise ConcurrentWrite("another server won")
        return organization

    with rt.read_then_write():
        rt.read(find_organization("org_missing"))
        added = rt.transaction(add_losing_once)
    assert writes == ["open", "end"] * 2
    assert rt.read(find_organization(attempts[0].id)) is None
    assert rt.read(find_organization(added.id)) == added


def test_read_then_write_later_reads_and_transactions_of_the_block_have_their_own(runtime: Runtime) -> None:
    rt, reads, writes = _joining(runtime)
    with rt.read_then_write():
        first = rt.transaction(add_organization("First"))  # no read before it: a unit of its own
        assert rt.read(find_organization(first.id)) == first
        second = rt.transaction(add_organization("Second"))
        assert rt.read(find_organization(second.id)) == second
    assert writes == ["open", "end"] * 2
    assert reads == ["open", "end"] * 2


def test_read_then_write_changes_nothing_where_the_store_does_not_allow_it(runtime: Runtime) -> None:
    rt, reads, writes = counted(evolve(runtime, reads_join_writes=False))
    with rt.read_then_write():
        rt.read(find_organization("org_missing"))
        rt.transaction(add_organization("Apart"))
    assert reads == ["open", "end"]
    assert writes == ["open", "end"]


def test_read_then_write_of_one_runtime_leaves_another_runtime_alone(runtime: Runtime) -> None:
    rt, _, writes = _joining(runtime)
    other, other_reads, other_writes = _joining(runtime)
    with rt.read_then_write():
        other.read(find_organization("org_missing"))
        other.transaction(add_organization("Other"))
        rt.read(find_organization("org_missing"))
        rt.transaction(add_organization("Own"))
    assert other_reads == ["open", "end"]
    assert other_writes == ["open", "end"]
    assert writes == ["open", "end"]


def test_read_then_write_a_transaction_inside_a_reads_work_is_refused(runtime: Runtime) -> None:
    """It would commit on its own, beside the block's transaction (probe R); the block's own
    transaction, after the read, still runs and commits."""
    rt, _, _writes = _joining(runtime)
    existing = rt.transaction(add_organization("Existing"))

    def read_that_writes(tx: Tx) -> Organization | None:
        rt.transaction(add_organization("From inside a read"))
        return tx.uow.organizations.get(existing.id)

    with rt.read_then_write():
        with pytest.raises(InternalError, match="or a read's"):
            rt.read(read_that_writes)
        rt.transaction(add_organization("After"))
    names = rt.read(lambda tx: sorted(o.name for o in tx.uow.organizations.find_all({})))
    assert names == ["After", "Existing"]
