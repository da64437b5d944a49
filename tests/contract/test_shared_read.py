"""``Runtime.shared_read``: the reads of one block share one read-only unit of work (every store).

A keyed ``GET`` authenticates and then reads; sharing one unit of work saves a pooled
connection's checkout, ``BEGIN`` and end (and PostgreSQL's liveness round trip) per request.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.errors import InternalError, NotFound
from refcore.models import Organization
from refcore.services.runtime import Runtime, Tx
from tests.contract.organization_work import add_organization, find_organization, missing_organization
from tests.unit_of_work_log import counted


def test_shared_read_the_reads_of_a_block_share_one_unit_of_work_opened_by_the_first(
    runtime: Runtime,
) -> None:
    rt, reads, _ = counted(runtime)
    organization = rt.transaction(add_organization("Shared"))

    with rt.shared_read():
        assert reads == []  # nothing is opened before a read needs it
        assert rt.read(find_organization(organization.id)) == organization
        assert rt.read(find_organization(organization.id)) == organization
        assert rt.read(find_organization("org_missing")) is None
        assert reads == ["open"]
    assert reads == ["open", "end"]

    rt.read(find_organization(organization.id))
    rt.read(find_organization(organization.id))
    assert reads == ["open", "end"] + ["open", "end"] * 2  # outside a block, one each


def test_shared_read_each_read_has_its_own_now(runtime: Runtime, clock: ManualClock) -> None:
    rt, _, _ = counted(runtime)
    seen: list[datetime] = []
    with rt.shared_read():
        rt.read(lambda tx: seen.append(tx.now))
        clock.advance(timedelta(seconds=5))
        rt.read(lambda tx: seen.append(tx.now))
    assert seen[1] - seen[0] == timedelta(seconds=5)


def test_shared_read_a_failed_read_ends_the_unit_of_work_and_the_next_read_opens_another(
    runtime: Runtime,
) -> None:
    rt, reads, _ = counted(runtime)
    organization = rt.transaction(add_organization("After a failure"))

    with rt.shared_read():
        with pytest.raises(NotFound):
            rt.read(missing_organization)
        assert reads == ["open", "end"]
        assert rt.read(find_organization(organization.id)) == organization
    assert reads == ["open", "end", "open", "end"]


def test_shared_read_a_write_in_the_block_has_its_own_unit_of_work_and_later_reads_see_it(
    runtime: Runtime,
) -> None:
    rt, reads, writes = counted(runtime)
    first = rt.transaction(add_organization("Before"))
    with rt.shared_read():
        assert rt.read(find_organization(first.id)) == first
        second = rt.transaction(add_organization("Inside"))
        assert writes == ["open", "end"] * 2
        # The first read's snapshot (SQLite) must not hide the write: a new unit of work.
        assert rt.read(find_organization(second.id)) == second
    assert reads == ["open", "end", "open", "end"]


def test_shared_read_of_one_runtime_leaves_the_reads_of_another_runtime_alone(runtime: Runtime) -> None:
    rt, reads, _ = counted(runtime)
    other, other_reads, _ = counted(runtime)
    organization = rt.transaction(add_organization("Two runtimes"))
    with rt.shared_read():
        other.read(find_organization(organization.id))
        other.read(find_organization(organization.id))
        rt.read(find_organization(organization.id))
    assert other_reads == ["open", "end", "open", "end"]
    assert reads == ["open", "end"]


def test_shared_read_a_read_inside_a_read_that_fails_leaves_the_outer_reads_unit_of_work_open(
    runtime: Runtime,
) -> None:
    """A read's work may read again; the inner read's failure must not end the unit of work the
    outer read is still using. It ends once the outer read is done."""
    rt, reads, _ = counted(runtime)
    organization = rt.transaction(add_organization("Nested"))

    def outer(tx: Tx) -> Organization | None:
        with pytest.raises(NotFound):
            rt.read(missing_organization)
        return tx.uow.organizations.get(organization.id)  # the outer read goes on

    with rt.shared_read():
        assert rt.read(outer) == organization
        assert reads == ["open", "end"]
        assert rt.read(find_organization(organization.id)) == organization
    assert reads == ["open", "end", "open", "end"]


def test_shared_read_a_write_inside_a_reads_work_is_refused_and_the_block_reads_on(
    runtime: Runtime,
) -> None:
    """A write from inside a read's work would commit on its own (probe R): it is refused, as
    inside a transaction's work, and the block's shared unit of work serves the next read."""
    rt, reads, _ = counted(runtime)
    first = rt.transaction(add_organization("Outer"))

    def outer(tx: Tx) -> Organization | None:
        rt.transaction(add_organization("Inner"))
        return tx.uow.organizations.get(first.id)

    with rt.shared_read():
        with pytest.raises(InternalError, match="or a read's"):
            rt.read(outer)
        assert rt.read(find_organization(first.id)) == first
    assert reads == ["open", "end", "open", "end"]  # the refusal ended the first, as any error does
    names = rt.read(lambda tx: [o.name for o in tx.uow.organizations.find_all({})])
    assert names == ["Outer"]
