"""``Runtime.check_with_first_read``: a lookup that must find its record rides with the first read
of a ``read_then_write`` block's work (every store is tested with reads joining writes).

The server uses it for a key it has authenticated before: only "is the key still not revoked?"
is left to ask, and a payment's lookup of what it reads carries it. What must hold whatever the
work does: nothing is committed before the check is answered, a refused check commits nothing,
and the block never ends, normally or with an error, unanswered (so nothing the work read is
answered before it either).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from attrs import evolve

from refcore.errors import NotFound, Unauthenticated, ValidationError
from refcore.models import Organization
from refcore.ports.lookups import Lookup
from refcore.services.runtime import Runtime, Tx
from tests.contract.organization_work import add_organization, find_organization
from tests.unit_of_work_log import watched


def _joining(runtime: Runtime) -> tuple[Runtime, list[str], Organization]:
    """The runtime with reads joining writes and its write units of work watched, and one
    organization stored (the record the checks look for)."""
    rt, touched = watched(evolve(runtime, reads_join_writes=True))
    existing = rt.transaction(add_organization("Standing"))
    touched.clear()
    return rt, touched, existing


def _check(organization_id: str) -> Lookup[Organization]:
    return Lookup("organizations", Organization, {"id": organization_id})


def _refused() -> Unauthenticated:
    return Unauthenticated("Invalid or revoked credential")


def _look_up_then_add(name: str, organization_id: str) -> Callable[[Tx], Organization | None]:
    """A payment's shape: one lookup of what it reads, then its writes."""

    def work(tx: Tx) -> Organization | None:
        read = _check(organization_id)
        found = tx.uow.look_up(read)[read]
        tx.uow.organizations.add(Organization(id=tx.new_id("org"), name=name, created_at=tx.now))
        return found

    return work


def _names(rt: Runtime) -> list[str]:
    page = rt.read(lambda tx: tx.uow.organizations.find_all({}))
    return sorted(organization.name for organization in page)


def test_first_read_check_rides_with_the_works_first_look_up(runtime: Runtime) -> None:
    rt, touched, existing = _joining(runtime)
    with rt.read_then_write():
        assert rt.check_with_first_read(_check(existing.id), _refused)
        assert rt.transaction(_look_up_then_add("Added", existing.id)) == existing
    # One look_up answered the check and the work's own lookup; nothing else was read.
    assert touched == ["look_up", "organizations", "commit"]
    assert _names(rt) == ["Added", "Standing"]


def test_first_read_check_refused_in_the_look_up_commits_nothing(runtime: Runtime) -> None:
    rt, touched, existing = _joining(runtime)
    with pytest.raises(Unauthenticated), rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        rt.transaction(_look_up_then_add("Refused", existing.id))
    assert touched == ["look_up"]  # refused before the work went on to write
    assert _names(rt) == ["Standing"]


def test_first_read_check_without_a_look_up_is_answered_alone_before_the_commit(runtime: Runtime) -> None:
    """A work that reads no lookup (a refund's row lock comes before its lookup; some writes
    have none): the check is read alone when the work commits, before its commit."""
    rt, touched, existing = _joining(runtime)
    with rt.read_then_write():
        assert rt.check_with_first_read(_check(existing.id), _refused)
        added = rt.transaction(add_organization("Added"))
    assert touched == ["organizations", "look_up", "commit"]
    assert rt.read(find_organization(added.id)) == added

    touched.clear()
    with pytest.raises(Unauthenticated), rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        rt.transaction(add_organization("Refused"))
    assert touched == ["organizations", "look_up"]  # refused instead of the commit
    assert _names(rt) == ["Added", "Standing"]


def test_first_read_check_rides_with_a_look_up_of_a_read_of_the_block_too(runtime: Runtime) -> None:
    rt, _, existing = _joining(runtime)

    def look_up_existing(tx: Tx) -> Organization | None:
        read = _check(existing.id)
        return tx.uow.look_up(read)[read]

    with pytest.raises(Unauthenticated), rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        rt.read(look_up_existing)
    with rt.read_then_write():
        assert rt.check_with_first_read(_check(existing.id), _refused)
        assert rt.read(look_up_existing) == existing


def test_first_read_check_a_block_whose_reads_did_not_answer_it_answers_it_when_it_ends(
    runtime: Runtime,
) -> None:
    """What a read found is answered only after the block: the check is answered first."""
    rt, _, existing = _joining(runtime)
    with pytest.raises(Unauthenticated), rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        assert rt.read(find_organization(existing.id)) == existing


def test_first_read_check_work_that_catches_the_refusal_still_cannot_commit(runtime: Runtime) -> None:
    rt, _, existing = _joining(runtime)

    def stubborn(tx: Tx) -> None:
        with pytest.raises(Unauthenticated):
            tx.uow.look_up(_check(existing.id))
        tx.uow.organizations.add(Organization(id=tx.new_id("org"), name="Stubborn", created_at=tx.now))

    with pytest.raises(Unauthenticated), rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        rt.transaction(stubborn)
    assert _names(rt) == ["Standing"]


def test_first_read_check_a_refusal_takes_the_place_of_the_blocks_own_error(runtime: Runtime) -> None:
    """A request refused before it read anything (bad input, a kind of key the endpoint does not
    take) is answered only once the check is: a revoked key is ``401`` whatever else was wrong."""
    rt, _, existing = _joining(runtime)
    with pytest.raises(Unauthenticated) as refused, rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        raise ValidationError("amount must be an integer", param="amount")
    assert isinstance(refused.value.__context__, ValidationError)

    with pytest.raises(ValidationError), rt.read_then_write():
        assert rt.check_with_first_read(_check(existing.id), _refused)
        raise ValidationError("amount must be an integer", param="amount")


def test_first_read_check_the_refusal_itself_leaves_unchanged(runtime: Runtime) -> None:
    rt, _, existing = _joining(runtime)
    with pytest.raises(Unauthenticated) as refused, rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        rt.transaction(_look_up_then_add("Refused", existing.id))
    assert refused.value.__context__ is None  # not answered twice, nor chained to itself


def test_first_read_check_a_block_that_read_nothing_answers_it_when_it_ends(runtime: Runtime) -> None:
    rt, touched, existing = _joining(runtime)
    with pytest.raises(Unauthenticated), rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
    with rt.read_then_write():
        assert rt.check_with_first_read(_check(existing.id), _refused)
    assert touched == []  # answered by a read of its own, not by a write unit of work


def test_first_read_check_a_failed_read_before_it_leaves_the_next_unit_of_work_checking(
    runtime: Runtime,
) -> None:
    """A read that fails before it touched the unit of work ends the block's shared one; the
    transaction after it has a unit of work of its own, which still answers the check first."""
    rt, _, existing = _joining(runtime)

    def refuses_at_once(tx: Tx) -> None:
        raise NotFound.of("organization", "org_missing")

    with pytest.raises(Unauthenticated), rt.read_then_write():
        assert rt.check_with_first_read(_check("org_revoked"), _refused)
        with pytest.raises(NotFound):
            rt.read(refuses_at_once)
        rt.transaction(add_organization("After"))
    assert _names(rt) == ["Standing"]
    assert existing.name == "Standing"


def test_first_read_check_is_taken_only_inside_a_joining_block(runtime: Runtime) -> None:
    joining, _, existing = _joining(runtime)
    assert not joining.check_with_first_read(_check(existing.id), _refused)  # no block
    with joining.read_then_write():
        assert joining.check_with_first_read(_check(existing.id), _refused)
        assert not joining.check_with_first_read(_check(existing.id), _refused)  # one a block
    with runtime.read_then_write():
        # Where reads do not join writes (SQLite, memory) the block shares nothing, takes nothing.
        assert runtime.check_with_first_read(_check(existing.id), _refused) == runtime.reads_join_writes
