"""``Repository.update_where``: one change to every matching record, the same on every store.

A canceled or failed payout releases all its items with it (one statement, where it had been one
``UPDATE`` an item); these tests pin what the port promises, whatever the caller."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

from refcore.errors import ConcurrentWrite
from refcore.models import Organization, User
from refcore.services.runtime import Runtime, Tx

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _organizations(runtime: Runtime, *names: str) -> list[Organization]:
    made = [Organization(id=f"org_{n}{name}", name=name, created_at=NOW) for n, name in enumerate(names)]
    runtime.transaction(lambda tx: tx.uow.organizations.add_all(made))
    return made


def _names(runtime: Runtime) -> dict[str, str]:
    return runtime.read(lambda tx: {o.id: o.name for o in tx.uow.organizations.find_all({})})


def test_update_where_changes_every_match_and_nothing_else(runtime: Runtime) -> None:
    first, second, other = _organizations(runtime, "acme", "acme", "globex")

    matched = runtime.transaction(
        lambda tx: tx.uow.organizations.update_where({"name": "acme"}, {"name": "initech"})
    )

    assert matched == 2
    assert _names(runtime) == {first.id: "initech", second.id: "initech", other.id: "globex"}


def test_update_where_answers_zero_when_nothing_matches(runtime: Runtime) -> None:
    (only,) = _organizations(runtime, "acme")

    matched = runtime.transaction(
        lambda tx: tx.uow.organizations.update_where({"name": "nobody"}, {"name": "x"})
    )

    assert matched == 0
    assert _names(runtime) == {only.id: "acme"}


def test_update_where_is_undone_with_its_unit_of_work(runtime: Runtime) -> None:
    (only,) = _organizations(runtime, "acme")

    def work(tx: Tx) -> None:
        tx.uow.organizations.update_where({"id": only.id}, {"name": "initech"})
        assert tx.uow.organizations.get(only.id) == attrs.evolve(only, name="initech")  # seen inside
        raise RuntimeError("roll back")

    with pytest.raises(RuntimeError, match="roll back"):
        runtime.transaction(work)
    assert _names(runtime) == {only.id: "acme"}


def test_a_replace_after_update_where_writes_what_it_is_given(runtime: Runtime) -> None:
    """The SQL repository remembers the rows it read so that ``replace`` writes only what changed;
    after ``update_where`` those rows may be stale, and a name put back to the value read first
    must still be written, not skipped as unchanged beside the field that did change."""
    (only,) = _organizations(runtime, "acme")
    later = datetime(2026, 2, 1, tzinfo=UTC)

    def work(tx: Tx) -> None:
        read = tx.uow.organizations.get(only.id)
        assert read is not None
        tx.uow.organizations.update_where({"id": only.id}, {"name": "initech"})
        tx.uow.organizations.replace(attrs.evolve(read, created_at=later))

    runtime.transaction(work)

    stored = runtime.read(lambda tx: tx.uow.organizations.get(only.id))
    assert stored == attrs.evolve(only, created_at=later)


def test_update_where_into_a_taken_unique_key_is_a_concurrent_write(runtime: Runtime) -> None:
    users = [
        User(id="usr_1", email="a@example.com", created_at=NOW),
        User(id="usr_2", email="b@example.com", created_at=NOW),
    ]
    runtime.transaction(lambda tx: tx.uow.users.add_all(users))

    with pytest.raises(ConcurrentWrite), runtime.unit_of_work() as uow:
        uow.users.update_where({"id": "usr_2"}, {"email": "a@example.com"})
        uow.commit()
    emails = runtime.read(lambda tx: sorted(u.email for u in tx.uow.users.find_all({})))
    assert emails == ["a@example.com", "b@example.com"]


def test_update_where_is_refused_on_the_append_only_ledger(runtime: Runtime) -> None:
    with pytest.raises(TypeError, match="append-only"):
        runtime.transaction(lambda tx: tx.uow.commission_entries.update_where({"id": "com_x"}, {"amount": 0}))


@pytest.mark.parametrize(
    ("where", "changes"),
    [({"nmae": "acme"}, {"name": "x"}), ({"name": "acme"}, {"nmae": "x"})],
    ids=["filter", "change"],
)
def test_update_where_refuses_a_field_the_model_lacks_even_when_nothing_matches(
    runtime: Runtime, where: dict[str, object], changes: dict[str, object]
) -> None:
    with pytest.raises(ValueError, match="'nmae'"):
        runtime.transaction(lambda tx: tx.uow.organizations.update_where(where, changes))
