"""Dashboard sessions end: a fixed lifetime after they were created, when their holder ends
one, and when an operator ends all of a user's. Run against every store (the expiry is computed
from the stored ``created_at``, so each store must give it back to the microsecond).

A session can create API keys: one that never ended would give a leaked token, or someone who
has left, that power for ever.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.errors import Forbidden, Unauthenticated
from refcore.models.tenancy import DEFAULT_SESSION_LIFETIME
from refcore.services import tenancy
from refcore.services.principal import PrincipalKind
from refcore.services.runtime import Runtime
from tests.contract.scenario import build_world

_MICROSECOND = timedelta(microseconds=1)


def _refusal(rt: Runtime, token: str) -> str:
    with pytest.raises(Unauthenticated) as refused:
        tenancy.authenticate(rt, token)
    return f"{refused.value.code}: {refused.value.message}"


def test_the_library_default_lifetime_is_thirty_days(runtime: Runtime) -> None:
    assert timedelta(days=30) == DEFAULT_SESSION_LIFETIME
    assert runtime.session_lifetime == DEFAULT_SESSION_LIFETIME


def test_a_session_works_until_one_microsecond_before_its_lifetime_and_not_at_it(
    runtime: Runtime, clock: ManualClock
) -> None:
    issued = tenancy.issue_session(runtime, "dev@example.com")
    assert issued.session.expires_at(runtime.session_lifetime) == clock.now() + timedelta(days=30)
    clock.advance(DEFAULT_SESSION_LIFETIME - _MICROSECOND)
    assert tenancy.authenticate(runtime, issued.token).kind is PrincipalKind.SESSION
    clock.advance(_MICROSECOND)
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(runtime, issued.token)


def test_the_runtimes_lifetime_decides_and_applies_to_sessions_already_made(
    runtime: Runtime, clock: ManualClock
) -> None:
    token = tenancy.issue_session(runtime, "dev@example.com").token
    clock.advance(timedelta(hours=2) - _MICROSECOND)
    assert tenancy.authenticate(runtime, token).kind is PrincipalKind.SESSION
    runtime.session_lifetime = timedelta(hours=2)
    assert tenancy.authenticate(runtime, token).kind is PrincipalKind.SESSION
    clock.advance(_MICROSECOND)
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(runtime, token)


def test_an_expired_session_is_refused_exactly_like_an_unknown_token(
    runtime: Runtime, clock: ManualClock
) -> None:
    token = tenancy.issue_session(runtime, "dev@example.com").token
    clock.advance(DEFAULT_SESSION_LIFETIME)
    assert _refusal(runtime, token) == _refusal(runtime, "sess_" + "x" * 43)


def test_the_unit_of_work_that_authenticates_applies_the_runtimes_lifetime(
    runtime: Runtime, clock: ManualClock
) -> None:
    """A capture batch authenticates its keys inside its own unit of work
    (:func:`tenancy.principal_in`), not through :func:`tenancy.authenticate`: a session sent
    there is judged by the runtime's lifetime too, not by the library default."""
    token = tenancy.issue_session(runtime, "dev@example.com").token
    runtime.session_lifetime = timedelta(hours=1)
    clock.advance(timedelta(hours=1))
    with pytest.raises(Unauthenticated):
        runtime.read(lambda tx: tenancy.principal_in(tx, token))
    with pytest.raises(Unauthenticated):
        runtime.transaction(lambda tx: tenancy.principal_in(tx, token))


def test_ending_a_session_refuses_its_token_and_leaves_the_users_other_sessions(runtime: Runtime) -> None:
    laptop = tenancy.issue_session(runtime, "dev@example.com")
    phone = tenancy.issue_session(runtime, "dev@example.com")
    ended = tenancy.end_session(runtime, tenancy.authenticate(runtime, laptop.token), laptop.token)
    assert ended.id == laptop.session.id and ended.ended
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(runtime, laptop.token)
    assert tenancy.authenticate(runtime, phone.token).user_id == phone.user.id
    # Ending it again: the token authenticates as nothing any more.
    owner = tenancy.authenticate(runtime, phone.token)
    with pytest.raises(Unauthenticated):
        tenancy.end_session(runtime, owner, laptop.token)


def test_a_session_ends_only_itself_and_only_a_session_may_end_one(
    runtime: Runtime, clock: ManualClock
) -> None:
    world = build_world(runtime, clock)
    mine = tenancy.issue_session(runtime, "me@example.com")
    theirs = tenancy.issue_session(runtime, "them@example.com")
    me = tenancy.authenticate(runtime, mine.token)
    with pytest.raises(Unauthenticated):
        tenancy.end_session(runtime, me, theirs.token)
    assert tenancy.authenticate(runtime, theirs.token).user_id == theirs.user.id
    app_key = next(iter(world.keys.values()))
    with pytest.raises(Forbidden):
        tenancy.end_session(runtime, app_key, mine.token)
    assert tenancy.authenticate(runtime, mine.token).user_id == mine.user.id


def test_an_expired_session_cannot_end_itself(runtime: Runtime, clock: ManualClock) -> None:
    issued = tenancy.issue_session(runtime, "dev@example.com")
    principal = tenancy.authenticate(runtime, issued.token)
    clock.advance(DEFAULT_SESSION_LIFETIME)
    with pytest.raises(Unauthenticated):
        tenancy.end_session(runtime, principal, issued.token)


def test_an_operator_ends_every_session_of_a_user_and_no_other(runtime: Runtime) -> None:
    first = tenancy.issue_session(runtime, "dev@example.com")
    second = tenancy.issue_session(runtime, "Dev@Example.com")
    other = tenancy.issue_session(runtime, "ops@example.com")
    assert tenancy.end_user_sessions(runtime, "DEV@example.com") == 2
    for token in (first.token, second.token):
        with pytest.raises(Unauthenticated):
            tenancy.authenticate(runtime, token)
    assert tenancy.authenticate(runtime, other.token).user_id == other.user.id
    assert tenancy.end_user_sessions(runtime, "dev@example.com") == 0  # none left
    assert tenancy.end_user_sessions(runtime, "nobody@example.com") is None  # no such user
    # The user can be given a new session afterwards.
    again = tenancy.issue_session(runtime, "dev@example.com")
    assert tenancy.authenticate(runtime, again.token).user_id == first.user.id


def test_ending_all_sessions_ends_expired_ones_so_a_longer_lifetime_cannot_revive_them(
    runtime: Runtime, clock: ManualClock
) -> None:
    old = tenancy.issue_session(runtime, "dev@example.com")
    clock.advance(DEFAULT_SESSION_LIFETIME)
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(runtime, old.token)
    assert tenancy.end_user_sessions(runtime, "dev@example.com") == 1
    runtime.session_lifetime = DEFAULT_SESSION_LIFETIME * 2
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(runtime, old.token)


def test_create_session_still_answers_the_user_and_a_working_token(runtime: Runtime) -> None:
    user, token = tenancy.create_session(runtime, "dev@example.com")
    assert tenancy.authenticate(runtime, token).user_id == user.id
