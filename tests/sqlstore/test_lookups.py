"""``look_up`` on SQL: a call is one statement, whatever its number of lookups.

The contract suite (``tests/contract/test_look_up.py``) shows what a call finds on every store;
this shows what it costs the SQL store, on SQLite and PostgreSQL: a payment's six reads (its
replay check, App, customer, program, referral and the referral's affiliate) and an identify's
five (the click, its program and affiliate, the customer and its referral) each go out as one
``SELECT``.
"""

from __future__ import annotations

from refcore.clocks import ManualClock
from refcore.models import App, Membership, Organization, User
from refcore.ports.lookups import FieldOf, Lookup
from refcore_sqlstore import SqlStore
from tests.contract.scenario import build_world
from tests.sqlstore.raw import recorded_statements


def _is_select(statement: str) -> bool:
    return statement.lstrip().upper().startswith("SELECT")


def test_look_up_sends_one_select_for_all_its_lookups(sql_store: SqlStore) -> None:
    runtime = sql_store.runtime(clock=ManualClock())
    membership = Lookup("memberships", Membership, {"organization_id": "org_missing"})
    lookups = (
        Lookup("apps", App, {"id": "app_missing"}),
        Lookup("organizations", Organization, {"name": "nobody"}),
        membership,
        Lookup("users", User, {"id": FieldOf(membership, "user_id")}),
    )

    with recorded_statements(sql_store, keep=_is_select) as selects:
        found = runtime.read(lambda tx: tx.uow.look_up(*lookups))

    assert [found[lookup] for lookup in lookups] == [None, None, None, None]
    assert len(selects) == 1


def test_a_payment_reads_everything_it_needs_in_one_select(sql_store: SqlStore) -> None:
    clock = ManualClock()
    world = build_world(sql_store.runtime(clock=clock), clock, hold_days=0)
    customer = world.referred_customer()
    world.pay(customer, 10_000)  # the first Live payment also locks the App's revenue source

    with recorded_statements(sql_store, keep=_is_select) as selects:
        recorded = world.pay(customer, 10_000)

    assert recorded.created and recorded.record.commission_amount > 0
    assert len(selects) == 1, [" ".join(statement.split())[:120] for statement, _ in selects]


def test_an_identify_by_click_and_external_id_reads_everything_in_one_select(sql_store: SqlStore) -> None:
    """The click, its program and affiliate, and the customer with its referral (none yet)."""
    clock = ManualClock()
    world = build_world(sql_store.runtime(clock=clock), clock, hold_days=0)
    click_id = world.capture()

    with recorded_statements(sql_store, keep=_is_select) as selects:
        identified = world.identify(click_id, external_customer_id="cus-one-select")
    with recorded_statements(sql_store, keep=_is_select) as selects_again:
        again = world.identify(click_id, external_customer_id="cus-one-select")

    assert identified.created and identified.referral.attributed
    assert not again.created and again.referral == identified.referral
    assert len(selects) == 1, [" ".join(statement.split())[:120] for statement, _ in selects]
    assert len(selects_again) == 1
