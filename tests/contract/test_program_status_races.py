"""Program state moves (interface 3.4) taken one after the other across threads and processes:
the program's row is locked before its status is judged, on every store."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from refcore.clocks import ManualClock
from refcore.models import ProgramStatus
from refcore.services import programs
from refcore.services.runtime import Runtime
from tests.contract.scenario import build_world


def test_a_disable_during_a_pause_waits_and_the_program_ends_disabled(
    runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pause is held after it judged the program ``active`` and before it writes ``paused``;
    a disable meanwhile must wait for it. On PostgreSQL it had not: the disable committed, then
    the pause wrote ``paused`` over it, and a disabled program was paused again."""
    world = build_world(runtime, clock)
    pause_judged, pause_may_go_on = threading.Event(), threading.Event()
    real_evolve = programs.evolve

    def held_evolve(program: Any, **changes: Any) -> Any:
        if changes.get("status") is ProgramStatus.PAUSED:
            pause_judged.set()
            assert pause_may_go_on.wait(10)
        return real_evolve(program, **changes)

    monkeypatch.setattr(programs, "evolve", held_evolve)
    with ThreadPoolExecutor(max_workers=2) as pool:
        paused = pool.submit(world.set_program_status, "pause")
        assert pause_judged.wait(10)
        disabled = pool.submit(world.set_program_status, "disable")
        with contextlib.suppress(TimeoutError):
            disabled.result(timeout=0.5)  # returns here only if the disable did not wait
        pause_may_go_on.set()
        assert paused.result(timeout=10).status is ProgramStatus.PAUSED
        assert disabled.result(timeout=10).status is ProgramStatus.DISABLED
    assert programs.get_program(runtime, world.session, world.program.id).status is ProgramStatus.DISABLED
