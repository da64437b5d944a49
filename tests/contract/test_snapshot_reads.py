"""``Runtime.read(snapshot=True)``: every statement of the work sees one moment (every store).

An answer whose figures several statements read (an overview's totals, the ready payouts CSV,
a batch and its payouts) must not mix moments. SQLite's reads and the memory store's always saw
one; PostgreSQL's read each statement's own, so a payment committed between two of an
overview's sums was counted by one and not the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from attrs import evolve

from refcore.clocks import ManualClock
from refcore.models import Organization
from refcore.services import overview, payouts
from refcore.services.runtime import Runtime, Tx
from tests.contract.organization_work import add_organization, find_organization
from tests.payouts.world import build_payout_world
from tests.unit_of_work_log import counted, counting

#: How long a snapshot read waits for another thread's write to commit in the middle of it.
WRITE_WAIT_SECONDS = 10.0


def _named(name: str) -> Callable[[Tx], list[Organization]]:
    return lambda tx: tx.uow.organizations.find_all({"name": name})


def _writes_wait_for_reads(runtime: Runtime) -> bool:
    """The memory store runs one unit of work at a time (a read holds its lock), so there a
    write cannot commit in the middle of a read at all; the SQL stores let it."""
    return runtime.read_unit_of_work is None


def test_snapshot_read_statements_after_another_threads_commit_still_see_the_first_statements_moment(
    runtime: Runtime,
) -> None:
    committed = threading.Event()

    def write() -> None:
        runtime.transaction(add_organization("During"))
        committed.set()

    writer = threading.Thread(target=write)
    seen: list[int] = []

    def work(tx: Tx) -> bool:
        seen.append(len(_named("During")(tx)))
        writer.start()
        wrote = committed.wait(timeout=0.2 if _writes_wait_for_reads(runtime) else WRITE_WAIT_SECONDS)
        seen.append(len(_named("During")(tx)))
        return wrote

    wrote_during_the_read = runtime.read(work, snapshot=True)
    writer.join()

    assert seen == [0, 0]
    assert wrote_during_the_read is not _writes_wait_for_reads(runtime)  # the race did happen
    assert len(runtime.read(_named("During"))) == 1  # and the write is there for the next read


def _snapshots_opened(runtime: Runtime) -> tuple[Runtime, list[str]]:
    """The runtime with snapshot units of work that are recorded (and only those): the store's
    own, or, where its reads are snapshots already (no factory of its own), its read units of
    work, so that what a snapshot read does is seen on every store."""
    opened: list[str] = []
    own = runtime.snapshot_unit_of_work or runtime.read_unit_of_work or runtime.unit_of_work
    return evolve(runtime, snapshot_unit_of_work=counting(own, opened)), opened


def test_snapshot_read_has_a_unit_of_work_of_its_own_and_ends_a_shared_reads_idle_one_first(
    runtime: Runtime,
) -> None:
    """Never the block's unit of work, which saw each statement's moment; and never beside it,
    which held two of the pool's connections a thread (a keyed ``GET``: the key's read, then
    its snapshot)."""
    with_snapshots, snapshots = _snapshots_opened(runtime)
    rt, reads, _ = counted(with_snapshots)
    organization = rt.transaction(add_organization("Shared"))

    with rt.shared_read():
        assert rt.read(find_organization(organization.id)) == organization
        assert rt.read(find_organization(organization.id), snapshot=True) == organization
        assert (reads, snapshots) == (["open", "end"], ["open", "end"])
        assert rt.read(find_organization(organization.id)) == organization  # the block opens another
        # Inside a read of the block, whose unit of work is in use, the snapshot opens beside it.
        assert rt.read(lambda tx: rt.read(find_organization(organization.id), snapshot=True)) == organization
        assert (reads, snapshots) == (["open", "end", "open"], ["open", "end"] * 2)
    assert reads == ["open", "end"] * 2


def test_snapshot_read_on_a_store_whose_reads_are_snapshots_already_is_a_plain_read(
    runtime: Runtime,
) -> None:
    """SQLite's and the memory store's reads, a shared block's included, see one moment: there a
    snapshot read joins the block like any read, and costs no unit of work of its own."""
    rt, reads, _ = counted(runtime)
    organization = rt.transaction(add_organization("Plain"))
    with rt.shared_read():
        assert rt.read(find_organization(organization.id)) == organization
        assert rt.read(find_organization(organization.id), snapshot=True) == organization
        own_snapshots = runtime.snapshot_unit_of_work is not None  # PostgreSQL's
        assert reads == (["open", "end"] if own_snapshots else ["open"])


def test_snapshot_read_is_what_the_overview_the_ready_payouts_and_a_batch_are_read_in(
    runtime: Runtime, clock: ManualClock
) -> None:
    pw = build_payout_world(runtime, clock)
    pw.earn(10_000)
    pw.past_hold()
    session, program_id = pw.world.session, pw.world.program.id
    rt, opened = _snapshots_opened(runtime)

    overview.overview(rt, session, pw.world.app.id)
    assert opened == ["open", "end"]
    assert len(payouts.list_ready_payouts(rt, session, program_id).data) == 1
    assert opened == ["open", "end"] * 2
    assert payouts.ready_payouts_csv(rt, session, program_id).count("\n") == 2  # header and row
    assert opened == ["open", "end"] * 3
    batch = pw.prepare()
    assert len(payouts.get_batch(rt, session, batch.id).executions) == 1
    assert opened == ["open", "end"] * 4
