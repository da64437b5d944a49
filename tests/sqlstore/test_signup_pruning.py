"""Pruning the signups never confirmed, a week after their token expired
(``refcore_sqlstore.signup_pruning``).

Each holds an address and a name that anyone may type into a join page; nothing deleted them
(probe V). A confirmed signup stays beside the affiliate it created, and for a week a late click
is still told its token expired.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from refcore.clocks import ManualClock
from refcore.errors import InvalidSignupToken
from refcore.services import join
from refcore_sqlstore import SqlStore
from refcore_sqlstore.signup_pruning import prune_pending_signups
from refcore_sqlstore.tables import pending_signups
from tests.contract.scenario import build_world
from tests.contract.test_selfservice_contract import ListMailer
from tests.sqlstore.raw import engine_of

NOW = datetime(2026, 2, 10, 5, 30, tzinfo=UTC)


def _ids(store: SqlStore) -> set[str]:
    with engine_of(store).connect() as connection:
        return set(connection.execute(select(pending_signups.c.id)).scalars())


def test_unconfirmed_signups_whose_token_expired_over_a_week_ago_are_deleted_and_no_other(
    sql_store: SqlStore,
) -> None:
    cutoff = join.signups_forgettable_before(NOW)
    assert cutoff == NOW - timedelta(days=7)
    rows = {
        "sgn_long_expired": (NOW - timedelta(days=40), None),
        "sgn_just_past_the_week": (cutoff - timedelta(seconds=1), None),
        "sgn_at_the_week": (cutoff, None),
        "sgn_expired_yesterday": (NOW - timedelta(days=1), None),
        "sgn_still_valid": (NOW + timedelta(hours=3), None),
        "sgn_confirmed_long_ago": (NOW - timedelta(days=40), NOW - timedelta(days=41)),
    }
    clock = ManualClock(NOW)
    world = build_world(sql_store.runtime(clock=clock), clock)
    with engine_of(sql_store).begin() as connection:
        connection.execute(
            insert(pending_signups),
            [
                {
                    "id": signup_id,
                    "app_id": world.app.id,
                    "program_id": world.program.id,
                    "email": f"{signup_id}@example.com",
                    "name": "Someone",
                    "token_digest": signup_id,
                    "expires_at": expires_at,
                    "created_at": expires_at - timedelta(hours=24),
                    "confirmed_at": confirmed_at,
                }
                for signup_id, (expires_at, confirmed_at) in rows.items()
            ],
        )
    assert prune_pending_signups(engine_of(sql_store), NOW, batch=1) == 2
    assert _ids(sql_store) == set(rows) - {"sgn_long_expired", "sgn_just_past_the_week"}
    assert sql_store.prune(NOW) == 0


def test_a_late_click_is_told_expired_for_a_week_then_its_signup_is_gone(sql_store: SqlStore) -> None:
    clock = ManualClock(NOW)
    world = build_world(sql_store.runtime(clock=clock), clock)
    mailer = ListMailer()
    join.start_signup(world.rt, mailer, world.program.slug, "late@x.example", "Late", client_ip=None)
    token = mailer.token_for("late@x.example")

    clock.advance(join.JoinPolicy().token_ttl + join.EXPIRED_SIGNUP_KEPT - timedelta(minutes=1))
    sql_store.prune(clock.now())
    with pytest.raises(InvalidSignupToken, match="has expired"):
        join.confirm_signup(world.rt, world.program.slug, token)

    clock.advance(timedelta(minutes=2))
    sql_store.prune(clock.now())
    with pytest.raises(InvalidSignupToken, match="not valid"):
        join.confirm_signup(world.rt, world.program.slug, token)
    with engine_of(sql_store).connect() as connection:
        emails = set(connection.execute(select(pending_signups.c.email)).scalars())
    assert "late@x.example" not in emails
