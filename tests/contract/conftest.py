"""Every test in tests/contract runs once per store in :data:`tests.stores.STORES`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from tests.stores import STORES


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=sorted(STORES))
def runtime(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[Runtime]:
    with STORES[request.param](clock) as rt:
        yield rt
