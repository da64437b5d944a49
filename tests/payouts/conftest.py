"""Payout tests run on the memory store with a manual clock (hold periods pass by moving it)."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_memstore import memory_runtime
from tests.payouts.world import PayoutWorld, build_payout_world


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(clock: ManualClock) -> Runtime:
    return memory_runtime(clock=clock)


@pytest.fixture
def pw(rt: Runtime, clock: ManualClock) -> PayoutWorld:
    return build_payout_world(rt, clock)
