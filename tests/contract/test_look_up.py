"""``UnitOfWork.look_up``: several single-record reads in one call, on every store.

Each lookup must find what its repository's ``find_one`` finds with the same filter (the same
record, value for value and type for type), ``None`` when nothing matches, and a ``FieldOf`` a
field of a record found earlier in the call: nothing when that record is missing or its field
is ``None`` (never "the field IS NULL").
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from refcore.models import App, Membership, Organization, RevenueSource, Session, User
from refcore.ports.lookups import FieldOf, Found, Lookup
from refcore.services.runtime import Runtime, Tx

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _seed(tx: Tx) -> None:
    tx.uow.organizations.add(Organization(id="org_a", name="A", created_at=NOW))
    tx.uow.organizations.add(Organization(id="org_lonely", name="No members", created_at=NOW))
    tx.uow.users.add(User(id="usr_a", email="a@example.com", created_at=NOW))
    tx.uow.memberships.add(
        Membership(id="mem_a", organization_id="org_a", user_id="usr_a", role="owner", created_at=NOW)
    )
    tx.uow.apps.add(
        App(
            id="app_a",
            organization_id="org_a",
            name="Locked",
            created_at=NOW,
            live_revenue_source=RevenueSource.API,
            processor_connected_live=True,
        )
    )
    tx.uow.apps.add(App(id="app_b", organization_id="org_a", name="Open", created_at=NOW))


def _read(runtime: Runtime, *lookups: Lookup[object]) -> Found:
    return runtime.read(lambda tx: tx.uow.look_up(*lookups))


def test_look_up_finds_what_find_one_finds_value_for_value(runtime: Runtime) -> None:
    runtime.transaction(_seed)
    locked = Lookup("apps", App, {"id": "app_a"})
    by_name = Lookup("apps", App, {"organization_id": "org_a", "name": "Open"})
    organization = Lookup("organizations", Organization, {"id": "org_a"})
    user = Lookup("users", User, {"email": "a@example.com"})

    found = _read(runtime, locked, by_name, organization, user)

    one_by_one = runtime.read(
        lambda tx: (
            tx.uow.apps.get("app_a"),
            tx.uow.apps.find_one({"organization_id": "org_a", "name": "Open"}),
            tx.uow.organizations.get("org_a"),
            tx.uow.users.find_one({"email": "a@example.com"}),
        )
    )
    assert (found[locked], found[by_name], found[organization], found[user]) == one_by_one
    app = found[locked]
    assert app is not None
    assert app.live_revenue_source is RevenueSource.API  # an enum, not its text
    assert app.processor_connected_live is True
    assert app.created_at == NOW and app.created_at.tzinfo is not None
    assert found[by_name] is not None and found[by_name].live_revenue_source is None


def test_look_up_gives_none_for_a_lookup_that_matches_nothing_and_still_finds_the_others(
    runtime: Runtime,
) -> None:
    runtime.transaction(_seed)
    missing = Lookup("apps", App, {"id": "app_missing"})
    present = Lookup("organizations", Organization, {"id": "org_a"})
    wrong_pair = Lookup("apps", App, {"id": "app_a", "name": "Open"})

    found = _read(runtime, missing, present, wrong_pair)

    assert found[missing] is None
    assert found[present] == Organization(id="org_a", name="A", created_at=NOW)
    assert found[wrong_pair] is None


def test_look_up_field_of_an_earlier_lookup_follows_its_record(runtime: Runtime) -> None:
    runtime.transaction(_seed)
    membership = Lookup("memberships", Membership, {"organization_id": "org_a"})
    member = Lookup("users", User, {"id": FieldOf(membership, "user_id")})
    organization = Lookup("organizations", Organization, {"id": FieldOf(membership, "organization_id")})

    found = _read(runtime, membership, member, organization)

    assert found[member] == User(id="usr_a", email="a@example.com", created_at=NOW)
    assert found[organization] is not None and found[organization].id == "org_a"


def test_look_up_field_of_a_missing_record_finds_nothing(runtime: Runtime) -> None:
    runtime.transaction(_seed)
    membership = Lookup("memberships", Membership, {"organization_id": "org_lonely"})
    member = Lookup("users", User, {"id": FieldOf(membership, "user_id")})

    found = _read(runtime, membership, member)

    assert found[membership] is None
    assert found[member] is None


def test_look_up_field_of_a_none_field_matches_nothing_not_the_null_rows(runtime: Runtime) -> None:
    """App ``app_b`` has no revenue source; an app whose ``live_revenue_source`` is its
    (``None``) value must not be found, although ``app_b`` itself is such an app."""
    runtime.transaction(_seed)
    open_app = Lookup("apps", App, {"id": "app_b"})
    same_source = Lookup("apps", App, {"live_revenue_source": FieldOf(open_app, "live_revenue_source")})

    found = _read(runtime, open_app, same_source)

    assert found[open_app] is not None and found[open_app].live_revenue_source is None
    assert found[same_source] is None


def test_look_up_a_none_value_means_the_field_is_null_as_in_find_one(runtime: Runtime) -> None:
    runtime.transaction(_seed)
    no_source = Lookup("apps", App, {"organization_id": "org_a", "live_revenue_source": None})

    found = _read(runtime, no_source)

    assert found[no_source] is not None and found[no_source].id == "app_b"


def test_look_up_sees_the_writes_of_its_own_unit_of_work(runtime: Runtime) -> None:
    def work(tx: Tx) -> tuple[Session | None, User | None]:
        tx.uow.users.add(User(id="usr_new", email="new@example.com", created_at=NOW))
        tx.uow.sessions.add(Session(id="ses_new", user_id="usr_new", token_digest="d", created_at=NOW))
        session = Lookup("sessions", Session, {"token_digest": "d"})
        user = Lookup("users", User, {"id": FieldOf(session, "user_id")})
        found = tx.uow.look_up(session, user)
        return found[session], found[user]

    session, user = runtime.transaction(work)

    assert session is not None and session.id == "ses_new"
    assert user is not None and user.email == "new@example.com"


def test_look_up_with_no_lookups_finds_nothing_and_fails_nothing(runtime: Runtime) -> None:
    assert isinstance(_read(runtime), Found)


@pytest.mark.parametrize(
    "case", ["reference-to-a-later-lookup", "reference-to-a-lookup-not-in-the-call", "same-lookup-twice"]
)
def test_look_up_refuses_a_call_whose_lookups_are_out_of_order(runtime: Runtime, case: str) -> None:
    runtime.transaction(_seed)
    membership: Lookup[object] = Lookup("memberships", Membership, {"organization_id": "org_a"})
    member: Lookup[object] = Lookup("users", User, {"id": FieldOf(membership, "user_id")})
    calls: dict[str, tuple[Lookup[object], ...]] = {
        "reference-to-a-later-lookup": (member, membership),
        "reference-to-a-lookup-not-in-the-call": (member,),
        "same-lookup-twice": (membership, membership, member),
    }

    with pytest.raises(ValueError, match="lookup"):
        _read(runtime, *calls[case])
