"""A library caller's bad input gets an error of the catalog (``refcore.errors``), never a raw
``KeyError`` or ``AttributeError``: the HTTP routes can only send what they parsed, a Python
caller can pass anything."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.errors import Unauthenticated, ValidationError
from refcore.services import programs, tenancy
from refcore.services.runtime import Runtime
from tests.contract.scenario import World, build_world


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


@pytest.mark.parametrize("action", ["explode", "PAUSE", "", None, 3])
def test_an_unknown_program_status_action_is_a_validation_error_and_changes_nothing(
    world: World, action: object
) -> None:
    before = world.snapshot()
    with pytest.raises(ValidationError) as refused:
        programs.change_program_status(world.rt, world.session, world.program.id, action)  # type: ignore[arg-type]
    assert refused.value.param == "action"
    assert "pause, resume, disable" in str(refused.value)
    assert world.snapshot() == before


@pytest.mark.parametrize("credential", [None, 5, b"key_app_x"])
def test_a_credential_that_is_not_text_is_unauthenticated(world: World, credential: object) -> None:
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(world.rt, credential)  # type: ignore[arg-type]
